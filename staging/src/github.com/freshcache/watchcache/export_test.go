package watchcache

import "context"

// Keys exposes keys, the size estimator's KeysFunc, to the external tests.
func (c *Cache) Keys(ctx context.Context) ([]string, error) { return c.keys(ctx) }
