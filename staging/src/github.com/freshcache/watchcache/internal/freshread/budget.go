package freshread

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/freshcache/watchcache/metrics"
)

// budget bounds the reads that TimeoutFallback sends to etcd at
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
// One per Reader. Its lock is a leaf: nothing is called while it is held.
type budget struct {
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
func (b *budget) take(cost int64, cached int) (bool, int64) {
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
func (b *budget) give(cost int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.objects -= cost
	b.mu.reads--
	return b.mu.objects
}

// FallBack serves a read whose freshness wait ended in TimeoutFallback
// (Wait returned FromEtcd) from etcd, through read, if the budget admits
// its cost (the objects etcd reads for it); otherwise it answers 429.
// Either way it counts the read's outcome.
func (r *Reader) FallBack(ctx context.Context, verb, requested string, cost int64, read func() error) error {
	ok, inFlight := r.fallbacks.take(cost, r.cfg.Cached())
	if !ok {
		r.cfg.Metrics.Read(verb, requested, metrics.OutcomeOverBudget)
		return apierrors.NewTooManyRequests(fmt.Sprintf(
			"the watch cache of %s did not catch up with etcd within %v, and the reads already sent to etcd instead cover %d objects, over the fallback budget",
			r.cfg.Resource, r.cfg.Timeout, inFlight), retryAfterSeconds)
	}
	r.cfg.Metrics.Read(verb, requested, metrics.OutcomeFallback)
	r.cfg.Metrics.FallbackInFlight(inFlight)
	defer func() { r.cfg.Metrics.FallbackInFlight(r.fallbacks.give(cost)) }()
	return r.Etcd(ctx, read)
}
