package watchcache

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

// Versioner implements storage.Interface.
func (c *Cache) Versioner() storage.Versioner { return c.cfg.Versioner }

// Create implements storage.Interface; it goes to etcd.
func (c *Cache) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if err := c.cfg.Storage.Create(ctx, key, obj, out, ttl); err != nil {
		return err
	}
	c.noteWrite(key, out)
	return nil
}

// noteWrite remembers key, and where the cache will hold obj, if obj was
// written at a key that is not its KeyFunc key (see misplacedKeys). It
// runs before the write returns to its caller, so that every read that
// starts after the write sees the record.
func (c *Cache) noteWrite(key string, obj runtime.Object) {
	stored, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil {
		return
	}
	cached, err := c.cfg.KeyFunc(obj)
	switch {
	case err != nil:
		c.misplaced.add(stored)
	case cached != stored:
		c.misplaced.add(stored, cached)
	default:
		return
	}
	klog.V(2).InfoS("freshcache: an object was written at a key that is not its KeyFunc key; reads of it go to etcd",
		"resource", c.cfg.GroupResource.String(), "key", stored, "keyFuncKey", cached, "keyFuncErr", err)
}

// suggestion returns a private copy of the cached object at key, which etcd3
// uses to skip a read (and retries if it is stale), or nil.
func (c *Cache) suggestion(key string) runtime.Object {
	if !c.Ready() {
		return nil
	}
	preparedKey, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil {
		return nil
	}
	if o, ok := c.snapshot().Get(preparedKey); ok {
		return o.Obj.DeepCopyObject()
	}
	return nil
}

// Delete implements storage.Interface; it goes to etcd with the cached
// object as the suggestion, as upstream's cacher does.
func (c *Cache) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions, validateDeletion storage.ValidateObjectFunc, _ runtime.Object, opts storage.DeleteOptions) error {
	if err := c.cfg.Storage.Delete(ctx, key, out, preconditions, validateDeletion, c.suggestion(key), opts); err != nil {
		return err
	}
	// The cache deletes whatever it holds at out's KeyFunc key, which is
	// not the deleted key if out was misplaced.
	c.noteWrite(key, out)
	return nil
}

// GuaranteedUpdate implements storage.Interface; it goes to etcd with the
// cached object as the suggestion.
func (c *Cache) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	if err := c.cfg.Storage.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, c.suggestion(key)); err != nil {
		return err
	}
	c.noteWrite(key, destination)
	return nil
}

// Stats implements storage.Interface. The object count comes from etcd (or
// its size estimator), as upstream's cacher does.
func (c *Cache) Stats(ctx context.Context) (storage.Stats, error) {
	return c.cfg.Storage.Stats(ctx)
}

// ReadinessCheck implements storage.Interface.
func (c *Cache) ReadinessCheck() error {
	if !c.Ready() {
		return storage.ErrStorageNotReady
	}
	return nil
}

// RequestWatchProgress implements storage.Interface. It asks etcd for a
// progress notification on the cache's own watch stream, through the
// freshness driver, so that it shares the one request in flight with
// waiting reads (and counts in progress_requests_total). The notification
// advances the cache revision and sends bookmarks to the cache's watchers
// that allow them; it does not reach watches opened directly on etcd.
func (c *Cache) RequestWatchProgress(ctx context.Context) error {
	return c.driver.requestProgress(ctx)
}

// GetCurrentResourceVersion implements storage.Interface; it asks etcd.
func (c *Cache) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return c.cfg.Storage.GetCurrentResourceVersion(ctx)
}

// EnableResourceSizeEstimation implements storage.Interface.
func (c *Cache) EnableResourceSizeEstimation(keys storage.KeysFunc) error {
	return c.cfg.Storage.EnableResourceSizeEstimation(keys)
}

// CompactRevision implements storage.Interface: the latest compaction the
// etcd3 store observed.
func (c *Cache) CompactRevision() int64 { return c.cfg.Storage.CompactRevision() }

// keysWaitTimeout is how long keys waits for the cache to reach etcd's
// revision: upstream's 3s (the cacher's blockTimeout), whatever
// ConsistentReadTimeout says, since no client waits on it.
const keysWaitTimeout = 3 * time.Second

// keys lists every key at a revision at least etcd's current one. It backs
// the etcd3 store's size estimator (SizeBasedListCostEstimate), so that
// estimating sizes does not list keys from etcd. After keysWaitTimeout it
// returns TooLargeResourceVersion, as upstream's does.
func (c *Cache) keys(ctx context.Context) ([]string, error) {
	rv, err := c.cfg.Storage.GetCurrentResourceVersion(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.waitFresh(ctx, rv, keysWaitTimeout); err != nil {
		return nil, err
	}
	return c.snapshot().Keys(), nil
}
