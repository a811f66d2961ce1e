package watchcache

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/freshcache/watchcache/oracle"
)

// NewStorageDecorator returns a generic.StorageDecorator that puts a
// freshcache Cache in front of the etcd3 store of every resource it
// decorates. It is a drop-in for upstream's
// genericregistry.StorageWithCacher().
//
// Feature gates left nil in opts are read once, now. Options are validated
// when the decorator builds a cache; an invalid value fails that call.
//
// With ConsistentReadsFromCache or FreshResourceVersionZero on, every cache
// of one etcd cluster shares one revision oracle from dopts.OracleRegistry
// (default oracle.Shared()), with an etcd client the registry dials from
// the resource's transport (dopts.DialOracle, default gRPC) and closes with
// the last cache (cluster.go).
// The etcd version guard runs when that client is dialled. The caches of
// one etcd cluster also share a LeaderBackoff, unless opts has one.
func NewStorageDecorator(dopts DecoratorOptions) generic.StorageDecorator {
	opts := dopts.withGatesResolved() // the embedded Options, gates resolved once
	// One LeaderBackoff per etcd cluster, shared by the caches built here,
	// unless the caller passed one.
	var backoffs struct {
		sync.Mutex
		byCluster map[string]*LeaderBackoff
	}
	leaderBackoff := func(t storagebackend.TransportConfig) *LeaderBackoff {
		backoffs.Lock()
		defer backoffs.Unlock()
		key := transportKey(t)
		b, ok := backoffs.byCluster[key]
		if !ok {
			if backoffs.byCluster == nil {
				backoffs.byCluster = map[string]*LeaderBackoff{}
			}
			b = NewLeaderBackoff()
			backoffs.byCluster[key] = b
		}
		return b
	}
	return func(
		storageConfig *storagebackend.ConfigForResource,
		resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error),
		newFunc func() runtime.Object,
		newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc,
		triggerFuncs storage.IndexerFuncs,
		indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		o := opts
		if o.EventsHistoryWindow == 0 {
			o.EventsHistoryWindow = storageConfig.EventsHistoryWindow
		}
		r, err := o.resolve(0)
		if err != nil {
			return nil, func() {}, err
		}
		rawConfig := storageConfig
		if r.revisionsFromWrites {
			// The store's writes tell the revision oracle when they go out.
			c := *storageConfig
			c.Transformer = AnnounceWrites(c.Transformer)
			rawConfig = &c
		}
		raw, destroyRaw, err := generic.NewRawStorage(rawConfig, newFunc, newListFunc, resourcePrefix)
		if err != nil {
			return raw, destroyRaw, err
		}
		var (
			orc           *oracle.Oracle
			disabled      string
			releaseOracle = func() {}
		)
		// Consistent LISTs need the oracle whatever the gates say.
		if len(storageConfig.Transport.ServerList) > 0 {
			reg := dopts.OracleRegistry
			if reg == nil {
				reg = oracle.Shared()
			}
			dial := dopts.DialOracle
			if dial == nil {
				dial = dialEtcd
			}
			orc, disabled, releaseOracle, err = acquireCluster(reg, storageConfig.Transport, dial)
			if err != nil {
				destroyRaw()
				return nil, func() {}, fmt.Errorf("watchcache: %s: %w", storageConfig.GroupResource, err)
			}
		}
		cfg := Config{
			Storage:                 raw,
			Versioner:               storage.APIObjectVersioner{},
			GroupResource:           storageConfig.GroupResource,
			ResourcePrefix:          resourcePrefix,
			KeyFunc:                 keyFunc,
			NewFunc:                 newFunc,
			NewListFunc:             newListFunc,
			GetAttrsFunc:            getAttrsFunc,
			IndexerFuncs:            triggerFuncs,
			Indexers:                indexers,
			ConsistentReadsDisabled: disabled,
			StoragePrefix:           storageConfig.Prefix,
		}
		if orc != nil {
			cfg.UseOracle(orc) // a nil *Oracle must not become a non-nil interface
		}
		if o.LeaderBackoff == nil {
			o.LeaderBackoff = leaderBackoff(storageConfig.Transport)
		}
		c, err := New(o, cfg)
		if err != nil {
			releaseOracle()
			destroyRaw()
			return nil, func() {}, fmt.Errorf("watchcache: %s: %w", storageConfig.GroupResource, err)
		}
		var once sync.Once
		destroy := func() {
			once.Do(func() {
				c.Stop()
				releaseOracle()
				destroyRaw()
			})
		}
		return c, destroy, nil
	}
}
