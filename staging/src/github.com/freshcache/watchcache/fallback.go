package watchcache

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/metrics"
)

// DefaultFallbackBudget is Options.FallbackBudget's default: the fallback
// reads of one resource in flight together cover at most as many objects
// as its cache holds.
const DefaultFallbackBudget = 1.0

// fallbackBudget bounds the reads that TimeoutFallback sends to etcd at
// once, by the objects they cover (kubernetes#138494). When etcd stalls,
// every consistent read times out at the same moment; unbounded, each
// becomes an etcd LIST of the whole range, and etcd and the apiserver both
// hold every answer at once: memory multiplies by the number of clients.
// With the budget, the answers in flight cover at most limit times the
// objects the cache holds, so a stall adds at most about that many copies
// of the resource, whatever the number of clients. A read over the budget
// gets 429 with Retry-After, which clients retry; by then the cache has
// usually caught up. The first fallback is always let through, so that a
// read larger than the budget (an empty cache, a tiny limit) can still
// fall back alone.
//
// One per Cache. Its lock is a leaf: nothing is called while it is held.
type fallbackBudget struct {
	// limit is the budget as a multiple of the cached objects; negative
	// means unbounded.
	limit float64

	mu struct {
		sync.Mutex
		// objects is what the reads in flight cover; reads counts them.
		objects int64
		reads   int
	}
}

// take admits a fallback read covering cost objects of a cache holding
// cached objects, and reports whether it may go, and the objects in flight
// after it.
func (b *fallbackBudget) take(cost int64, cached int) (bool, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit >= 0 && b.mu.reads > 0 && float64(b.mu.objects+cost) > b.limit*float64(cached) {
		return false, b.mu.objects
	}
	b.mu.objects += cost
	b.mu.reads++
	return true, b.mu.objects
}

// give returns what take admitted, and the objects still in flight.
func (b *fallbackBudget) give(cost int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.objects -= cost
	b.mu.reads--
	return b.mu.objects
}

// fallBack serves a read whose freshness wait ended in TimeoutFallback
// from etcd, through read, if the budget admits its cost; otherwise it
// answers 429. Either way it counts the read's outcome.
func (c *Cache) fallBack(ctx context.Context, verb, requested string, cost int64, read func() error) error {
	ok, inFlight := c.fallbacks.take(cost, c.snapshot().Len())
	if !ok {
		c.metrics.Read(verb, requested, metrics.OutcomeOverBudget)
		return apierrors.NewTooManyRequests(fmt.Sprintf(
			"the watch cache of %s did not catch up with etcd within %v, and the reads already sent to etcd instead cover %d objects, over the fallback budget",
			c.cfg.GroupResource, c.opts.ConsistentReadTimeout, inFlight), retryAfterSeconds)
	}
	c.metrics.Read(verb, requested, metrics.OutcomeFallback)
	c.metrics.FallbackInFlight(inFlight)
	defer func() { c.metrics.FallbackInFlight(c.fallbacks.give(cost)) }()
	return c.etcdRead(ctx, read)
}

// listCost is how many objects etcd reads for a LIST: the objects of its
// key range (as the cache knows them), or its limit when nothing filters
// the range (etcd reads on past the limit to fill a filtered page).
func (c *Cache) listCost(req listRequest, opts storage.ListOptions) int64 {
	if !opts.Recursive {
		return 1
	}
	n := int64(c.snapshot().CountRange(req.key, req.end(true)))
	if l := opts.Predicate.Limit; l > 0 && l < n && opts.Predicate.Empty() {
		n = l
	}
	return max(n, 1)
}
