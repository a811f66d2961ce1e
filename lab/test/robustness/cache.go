package robustness

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // registers core/v1 in legacyscheme
	registrypod "k8s.io/kubernetes/pkg/registry/core/pod"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Namespace holds every pod of a run.
const Namespace = "default"

// Cache is one "apiserver": the real pod registry store
// (genericregistry.Store with the pod registry's attrs, trigger and
// nodeName index) built by a StorageDecorator, talking to one etcd member
// through that member's client proxy. Restart destroys it and builds a new
// one, as an apiserver restart does.
type Cache struct {
	index    int
	member   int
	endpoint string
	decorate generic.StorageDecorator

	// mu guards the current store; Restart swaps it.
	mu      sync.RWMutex
	store   *genericregistry.Store
	gen     int
	stopped bool
}

// NewCache builds the pod storage for cache index, pinned to member.
func NewCache(index, member int, endpoint string, decorate generic.StorageDecorator) (*Cache, error) {
	c := &Cache{index: index, member: member, endpoint: endpoint, decorate: decorate}
	s, err := c.build()
	if err != nil {
		return nil, err
	}
	c.store = s
	return c, nil
}

type restOptions struct {
	endpoint string
	decorate generic.StorageDecorator
}

// storageCodec is how the in-process stores encode pods for etcd: JSON of
// core/v1, decoded to the internal type (with defaulting). Their
// transformer is the default one (identity.NewEncryptCheckTransformer:
// bytes unchanged), so etcd holds exactly these bytes; clients that write
// to etcd directly (txn.go) encode with it too.
func storageCodec() runtime.Codec { return legacyscheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion) }

func (o restOptions) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	cfg := storagebackend.NewDefaultConfig("/registry", storageCodec())
	cfg.Transport.ServerList = []string{o.endpoint}
	cfg.CompactionInterval = 0 // the fault schedule compacts, nobody else
	cfg.DBMetricPollInterval = 0
	return generic.RESTOptions{
		StorageConfig:           cfg.ForResource(resource),
		Decorator:               o.decorate,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          "/" + resource.Resource,
	}, nil
}

func (c *Cache) build() (*genericregistry.Store, error) {
	s := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &api.Pod{} },
		NewListFunc:               func() runtime.Object { return &api.PodList{} },
		PredicateFunc:             registrypod.MatchPod,
		DefaultQualifiedResource:  api.Resource("pods"),
		SingularQualifiedResource: api.Resource("pod"),
		CreateStrategy:            registrypod.Strategy,
		UpdateStrategy:            registrypod.Strategy,
		DeleteStrategy:            registrypod.Strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(api.Resource("pods")),
	}
	err := s.CompleteWithOptions(&generic.StoreOptions{
		RESTOptions: restOptions{endpoint: c.endpoint, decorate: c.decorate},
		AttrFunc:    registrypod.GetAttrs,
		TriggerFunc: map[string]storage.IndexerFunc{"spec.nodeName": registrypod.NodeNameTriggerFunc},
		Indexers:    registrypod.Indexers(),
	})
	if err != nil {
		return nil, fmt.Errorf("cache %d: %w", c.index, err)
	}
	return s, nil
}

var _ API = (*Cache)(nil)

// Index implements API.
func (c *Cache) Index() int { return c.index }

// Member implements API.
func (c *Cache) Member() int { return c.member }

// Do implements API through the storage.Interface.
func (c *Cache) Do(ctx context.Context, op *record.Op) error {
	s, _ := c.Storage()
	return execute(ctx, s, c, op)
}

// Watch implements API through the storage.Interface.
func (c *Cache) Watch(ctx context.Context, node string, rv int64) (watch.Interface, error) {
	s, _ := c.Storage()
	field := fields.Everything()
	if node != "" {
		field = fields.OneTermEqualSelector("spec.nodeName", node)
	}
	pred := registrypod.MatchPod(labels.Everything(), field)
	pred.AllowWatchBookmarks = true
	return s.Watch(ctx, c.ListKey(), storage.ListOptions{
		ResourceVersion: strconv.FormatInt(rv, 10),
		Recursive:       true,
		Predicate:       pred,
	})
}

// Storage returns the current storage.Interface and its generation.
func (c *Cache) Storage() (storage.Interface, int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.store.Storage.Storage, c.gen
}

// Key is the storage key of a pod.
func (c *Cache) Key(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, _ := c.store.KeyFunc(nsCtx(), name)
	return k
}

// ListKey is the storage key of the namespace's pods.
func (c *Cache) ListKey() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.store.KeyRootFunc(nsCtx())
}

func nsCtx() context.Context {
	return genericapirequest.WithNamespace(context.Background(), Namespace)
}

// WaitReady waits until the cache answers an rv=0 LIST (its first list is
// in), or ctx ends.
func (c *Cache) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s, _ := c.Storage()
		err := s.ReadinessCheck()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cache %d not ready: %w (last: %v)", c.index, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Restart destroys the storage (its watchers end) and builds a new one.
func (c *Cache) Restart(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.store.DestroyFunc()
	s, err := c.build()
	if err != nil {
		return err
	}
	c.store = s
	c.gen++
	return nil
}

// Stop destroys the storage.
func (c *Cache) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.stopped = true
		c.store.DestroyFunc()
	}
}
