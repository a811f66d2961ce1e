package watchcache

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

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
