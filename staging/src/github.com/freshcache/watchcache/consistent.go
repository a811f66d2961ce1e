package watchcache

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"github.com/freshcache/watchcache/freshness"
	"github.com/freshcache/watchcache/internal/driver"
	"github.com/freshcache/watchcache/internal/plan"
	"github.com/freshcache/watchcache/metrics"
)

// retryAfterSeconds is the Retry-After of "too large resource version",
// "not ready" and rejected consistent reads, as upstream uses.
const retryAfterSeconds = 1

// served says where a read that needed freshness must be answered from.
type served uint8

const (
	fromCache served = iota + 1 // a snapshot taken from now on is fresh enough
	fromEtcd                    // delegate with rv="" (a quorum read)
)

// freshRead is the freshness wait of one read: the wait itself (through the
// driver), then what plan.Wait.After decides from how it ended, and its
// metrics. p is a plan.Fresh plan (a Consistent read in the Machine) or a
// plan.NotOlder one (p.RV); its metrics labels come from the plan.
//
//   - fromCache: serve from a snapshot taken after the return.
//   - fromEtcd: delegate with rv="" to the underlying storage, through
//     fallBack, which counts the outcome and applies the fallback budget.
//     (A read whose consistent reads the version guard disabled is planned
//     plan.Etcd and never gets here.)
//   - an error: TooManyRequests with Retry-After, TooLargeResourceVersion,
//     the failed fetch's error (a WATCH), or ctx.Err()/ErrStopped.
func (c *Cache) freshRead(ctx context.Context, v plan.Verb, p plan.Plan) (served, error) {
	verb, requested, minRV := v.String(), p.Requested(), p.RV
	w := plan.Wait{Verb: v, Zero: p.Zero, Reject: c.opts.TimeoutAction == TimeoutReject}
	switch p.Source {
	case plan.Fresh:
		w.Consistent = true
		if rv, ok := c.boundedZero(p); ok {
			w.Consistent, w.Bounded, minRV = false, true, rv
		}
	case plan.NotOlder:
	default:
		return 0, fmt.Errorf("watchcache: no freshness wait for a %v plan", p.Source)
	}
	if !w.Consistent && c.RV() >= minRV {
		// The cache reached minRV already: nothing to wait for.
		c.metrics.ReadWait(verb, requested, 0)
		c.metrics.ReadReleased(verb, requested, 0)
		c.metrics.Read(verb, requested, metrics.OutcomeCache)
		return fromCache, nil
	}
	start := c.opts.Clock.Now()
	var vd driver.Verdict
	var err error
	switch {
	case w.Patient():
		vd, err = c.driver.WaitPatient(ctx)
	case w.Consistent:
		vd, err = c.driver.Wait(ctx, freshness.Consistent, minRV)
	default:
		vd, err = c.driver.Wait(ctx, freshness.NotOlderThan, minRV)
	}
	c.metrics.ReadWait(verb, requested, c.opts.Clock.Since(start))
	if err != nil {
		c.metrics.Read(verb, requested, metrics.OutcomeError)
		return 0, err
	}
	ending := plan.TimedOut
	switch vd.Kind {
	case driver.Released:
		ending = plan.Released
	case driver.Failed:
		ending = plan.FetchFailed
	}
	outcome := w.After(ending)
	if ending == plan.FetchFailed {
		klog.V(2).InfoS("freshcache: revision fetch failed", "resource", c.cfg.GroupResource.String(), "verb", verb, "outcome", outcome.String(), "err", vd.Err)
	}
	switch outcome {
	case plan.ServeCache:
		c.metrics.ReadReleased(verb, requested, vd.At.Sub(start))
		c.metrics.Read(verb, requested, metrics.OutcomeCache)
		return fromCache, nil
	case plan.ServeEtcd:
		return fromEtcd, nil // fallBack counts the outcome
	}
	c.metrics.Read(verb, requested, metrics.OutcomeRejected)
	switch outcome {
	case plan.FailWithFetchError:
		return 0, vd.Err
	case plan.TooLargeForRead:
		return 0, storage.NewTooLargeResourceVersionError(minRV, c.RV(), retryAfterSeconds)
	case plan.TooLargeForTarget:
		return 0, storage.NewTooLargeResourceVersionError(uint64(vd.Target), c.RV(), retryAfterSeconds)
	}
	if ending == plan.FetchFailed {
		return 0, apierrors.NewTooManyRequests(
			fmt.Sprintf("the revision of etcd could not be fetched for a consistent read of %s: %v", c.cfg.GroupResource, vd.Err),
			retryAfterSeconds)
	}
	return 0, apierrors.NewTooManyRequests(
		fmt.Sprintf("the watch cache of %s did not catch up with etcd within %v", c.cfg.GroupResource, c.opts.ConsistentReadTimeout),
		retryAfterSeconds)
}

// boundedZero returns the revision an rv=0 read under
// FreshResourceVersionZero may be served at without a fetch of its own:
// one that a fetch or a write of this process sent at most
// ZeroReadStaleness before the read arrived was answered with. So the read
// reflects every write acknowledged that long before it arrived, which
// is the guarantee rv=0 gives (Options.ZeroReadStaleness). False: no such
// revision, or the read is not an rv=0 read; it waits for a fetch issued
// after it arrived, as rv="" does.
//
// Why a bound rather than rv=""'s strictness: rv=0 means "any state the
// cache holds" to every client written against upstream, and what breaks
// them is state from before something they already acted on (a kubelet
// that restarts and runs a pod deleted minutes ago), not state a tenth of
// a second old. With the bound, rv=0 reads cost at most one revision
// fetch per bound however many arrive, and most find a revision a write
// of this process or another read's fetch brought in already. The bound
// never hides a write of the resource that went through this cache: the
// read waits for the newest one acknowledged before it arrived.
func (c *Cache) boundedZero(p plan.Plan) (uint64, bool) {
	if !p.Zero || c.opts.ZeroReadStaleness <= 0 || c.driver.Source() == nil {
		return 0, false
	}
	rv, ok := c.driver.Source().RecentRevision(c.opts.ZeroReadStaleness)
	if !ok || rv <= 0 {
		return 0, false
	}
	// Not older than a write of this resource that this apiserver
	// acknowledged before the read arrived: a client that wrote through
	// it, then reads at rv=0, sees its write, as with rv="". The cache
	// holds such a revision whole the moment its event arrives, so this
	// costs at most that event's delay, never a progress round trip.
	return max(uint64(rv), c.ownWrite.Load()), true
}

// waitFresh blocks until the cache revision is at least rv, without
// metrics: for Exact LISTs and internal callers (size estimation). It
// returns TooLargeResourceVersion after timeout (on the cache's clock), as
// upstream does after its 3s; zero means ConsistentReadTimeout.
func (c *Cache) waitFresh(ctx context.Context, rv uint64, timeout time.Duration) error {
	if c.RV() >= rv {
		return nil
	}
	if timeout == 0 {
		timeout = c.opts.ConsistentReadTimeout
	}
	v, err := c.driver.WaitWithin(ctx, freshness.NotOlderThan, rv, timeout)
	if err != nil {
		return err
	}
	if v.Kind != driver.Released {
		return storage.NewTooLargeResourceVersionError(rv, c.RV(), retryAfterSeconds)
	}
	return nil
}
