package apiserver

import (
	"errors"
	"fmt"

	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"github.com/freshcache/watchcache"
)

// Decorator returns the storage decorator of the chosen implementation.
// For freshcache it resolves the feature gates now, so call it after the
// command line (and --feature-gates) has been parsed.
func (o *Options) Decorator() (generic.StorageDecorator, error) {
	switch o.WatchCacheImplementation {
	case Upstream:
		return genericregistry.StorageWithCacher(), nil
	case Freshcache:
		return watchcache.NewStorageDecorator(watchcache.DecoratorOptions{Options: o.WatchcacheOptions()}), nil
	default:
		return nil, validImplementation(o.WatchCacheImplementation)
	}
}

// ApplyTo installs the chosen cache in every getter of cfg that upstream
// would have given a cacher: the kube APIs, apiextensions' built-in
// resources and its CRD getter, and the aggregator's APIServices.
// Call it after app.NewConfig and before Config.Complete.
func (o *Options) ApplyTo(cfg *app.Config) error {
	if cfg == nil || cfg.KubeAPIs == nil || cfg.ApiExtensions == nil || cfg.Aggregator == nil {
		return errors.New("apiserver: ApplyTo needs a config built by app.NewConfig")
	}
	decorator, err := o.Decorator()
	if err != nil {
		return err
	}
	impl := o.WatchCacheImplementation
	for _, slot := range getterSlots(cfg) {
		if *slot.getter == nil {
			return fmt.Errorf("apiserver: the %s config has no RESTOptionsGetter to wrap", slot.name)
		}
		*slot.getter = WrapGetter(*slot.getter, impl, decorator)
	}
	return nil
}

type getterSlot struct {
	name   string
	getter *generic.RESTOptionsGetter
}

// getterSlots lists every place in a kube-apiserver config where upstream
// keeps a RESTOptionsGetter that may hand out a cacher.
func getterSlots(cfg *app.Config) []getterSlot {
	return []getterSlot{
		{"kube APIs", &cfg.KubeAPIs.ControlPlane.Generic.RESTOptionsGetter},
		{"apiextensions", &cfg.ApiExtensions.GenericConfig.RESTOptionsGetter},
		{"custom resources", &cfg.ApiExtensions.ExtraConfig.CRDRESTOptionsGetter},
		{"aggregator", &cfg.Aggregator.GenericConfig.RESTOptionsGetter},
	}
}

// WatchcacheOptions maps the flags onto the library's options. Fields the
// flags do not cover keep the library's production defaults.
func (o *Options) WatchcacheOptions() watchcache.Options {
	staleness := o.ResourceVersionZeroMaxStaleness
	if staleness == 0 {
		staleness = -1 // the library's "none"; its zero is the default
	}
	return watchcache.Options{
		ConsistentReadTimeout: o.ConsistentReadTimeout,
		TimeoutAction:         o.ConsistentReadTimeoutAction,
		FallbackBudget:        o.ConsistentReadFallbackBudget,
		ZeroReadStaleness:     staleness,
	}
}
