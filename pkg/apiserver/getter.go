package apiserver

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/klog/v2"
)

// WrapGetter returns a RESTOptionsGetter that asks inner for the options of a
// resource and then replaces a caching decorator with decorator. Resources for
// which upstream chose no cache (generic.UndecoratedStorage) are returned as
// they are, so --watch-cache=false and a zero entry in --watch-cache-sizes keep
// their meaning. A nil inner stays nil: some configs (the aggregator's and
// apiextensions' copies) are built without a getter until ApplyTo runs.
func WrapGetter(inner generic.RESTOptionsGetter, impl Implementation, decorator generic.StorageDecorator) generic.RESTOptionsGetter {
	if inner == nil {
		return nil
	}
	if already, ok := inner.(*swappingGetter); ok {
		inner = already.inner
	}
	return &swappingGetter{inner: inner, impl: impl, decorator: decorator}
}

// swappingGetter is immutable after WrapGetter returns it.
type swappingGetter struct {
	inner     generic.RESTOptionsGetter
	impl      Implementation
	decorator generic.StorageDecorator
}

func (g *swappingGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.inner.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	if !IsCaching(opts.Decorator) {
		klog.V(3).InfoS("Watch cache off for resource", "resource", resource)
		return opts, nil
	}
	klog.V(3).InfoS("Watch cache on for resource", "resource", resource, "implementation", g.impl)
	opts.Decorator = g.decorator
	return opts, nil
}

// IsCaching reports whether d would put a cache in front of etcd, that is
// whether it is anything but generic.UndecoratedStorage. Upstream's getters
// return either that function itself or a cacher closure, so comparing the
// code pointers is exact.
func IsCaching(d generic.StorageDecorator) bool {
	if d == nil {
		return false
	}
	return reflect.ValueOf(d).Pointer() != undecoratedPointer
}

var undecoratedPointer = reflect.ValueOf(generic.StorageDecorator(generic.UndecoratedStorage)).Pointer()
