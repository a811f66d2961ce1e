package watchcache

import "context"

// Keys exposes keys, the size estimator's KeysFunc, to the external tests.
func (c *Cache) Keys(ctx context.Context) ([]string, error) { return c.keys(ctx) }

// HeldForTest is how many objects the cache's newest snapshot holds, read
// without any freshness wait: what an rv=0 LIST returned before
// FreshResourceVersionZero was on by default.
func (c *Cache) HeldForTest() int { return len(c.snapshot().Keys()) }
