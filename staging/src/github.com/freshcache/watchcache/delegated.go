package watchcache

import (
	"context"

	"k8s.io/apiserver/pkg/storage"
)

// The storage.Interface methods below are answered by etcd through the
// etcd3 store, as upstream's cacher answers them, or by the cache's own
// freshness driver (RequestWatchProgress).

// Versioner implements storage.Interface.
func (c *Cache) Versioner() storage.Versioner { return c.cfg.Versioner }

// Stats implements storage.Interface. The object count comes from etcd (or
// its size estimator), as upstream's cacher does.
func (c *Cache) Stats(ctx context.Context) (storage.Stats, error) {
	return c.cfg.Storage.Stats(ctx)
}

// RequestWatchProgress implements storage.Interface. It asks etcd for a
// progress notification on the cache's own watch stream, through the
// freshness driver, so that it shares the one request in flight with
// waiting reads (and counts in progress_requests_total). The notification
// advances the cache revision and sends bookmarks to the cache's watchers
// that allow them; it does not reach watches opened directly on etcd.
func (c *Cache) RequestWatchProgress(ctx context.Context) error {
	return c.driver.RequestProgress(ctx)
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
