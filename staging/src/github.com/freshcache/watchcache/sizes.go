package watchcache

import (
	"context"
	"time"
)

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
	if err := c.fresh.WaitFor(ctx, rv, keysWaitTimeout); err != nil {
		return nil, err
	}
	return c.snapshot().Keys(), nil
}
