package watchcache

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"github.com/freshcache/watchcache/freshness"
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
// driver), the decision it leads to and its metrics.
//
//   - p is a plan.Fresh plan (a Consistent read in the Machine) or a
//     plan.NotOlder one (p.RV); its metrics labels come from the plan.
//   - fromCache: serve from a snapshot taken after the return.
//   - fromEtcd: delegate with rv="" to the underlying storage, through
//     fallBack, which counts the outcome and applies the fallback budget.
//     That happens with TimeoutFallback when the revision fetch failed or
//     the wait timed out. Never for a WATCH (see below), nor for an rv=0
//     LIST (zeroList).
//     (A read whose consistent reads the version guard disabled is planned
//     plan.Etcd and never gets here.)
//   - an error: TooManyRequests with Retry-After (TimeoutReject, or an
//     rv=0 LIST, after a timeout or a failed fetch),
//     TooLargeResourceVersion (a NotOlderThan read that timed out, as
//     upstream), or ctx.Err()/ErrStopped.
//
// A WATCH is never served by opening a watch on etcd: upstream's cacher
// never does for a cached resource, and a watch on etcd would hold an etcd
// watcher (and its memory) per client for as long as the client stays.
// So TimeoutFallback does not apply to it. Instead a consistent WATCH
// waits as upstream's does (cacher.go, Watch: getWatchCacheResourceVersion
// reads etcd's revision with GetCurrentResourceVersion under the watch's
// context, then waitUntilFreshAndForceAllEvents gives the cache 3 s): it
// waits for its revision for as long as ctx lasts, through fetches that
// end unanswered (driver.waitPatient), and then ConsistentReadTimeout for
// the cache to reach it; if the cache does not, it gets
// TooLargeResourceVersion with Retry-After. A fetch that fails (etcd
// refused it) fails the watch with that error, as upstream's watch fails
// when GetCurrentResourceVersion returns one; client-go then falls back
// to LIST and WATCH. Failing fast instead, while upstream waits, would
// send a watch-list client to its fallback, a LIST at rv=0 that the cache
// answers as it is, stale (kubernetes#59848 with a real kubelet). The
// caller must not ask for a consistent WATCH while consistent reads are
// disabled.
//
// TimeoutReject keeps its meaning for a WATCH too: the whole wait,
// revision included, is bounded by ConsistentReadTimeout from arrival,
// and a watch that times out or whose fetch failed gets 429 with
// Retry-After. The operator asked for bounded waits and load shedding
// (upstream has no such flag), and a 429 is safe here: client-go's
// reflector backs off and retries a watch-list that got one
// (isWatchErrorRetriable), it does not fall back to the rv=0 LIST.
//
// A failed revision fetch follows TimeoutAction like a timeout does. The
// fetch is a one-key linearizable read; if it failed, etcd (or the member
// we talk to) is in trouble. With fallback the delegated read either gets a
// quorum answer, which is fresh, or fails with etcd's own error. With
// reject the read gets 429 and Retry-After instead, so that a struggling
// etcd is not handed every read at once (the overload of
// kubernetes#138494). Neither answer is stale.
func (c *Cache) freshRead(ctx context.Context, v plan.Verb, p plan.Plan) (served, error) {
	verb, requested, minRV := v.String(), p.Requested(), p.RV
	kind := freshness.NotOlderThan
	switch p.Source {
	case plan.Fresh:
		kind = freshness.Consistent
	case plan.NotOlder:
	default:
		return 0, fmt.Errorf("watchcache: no freshness wait for a %v plan", p.Source)
	}
	if kind == freshness.NotOlderThan && c.RV() >= minRV {
		// The cache reached minRV already: nothing to wait for.
		c.metrics.ReadWait(verb, requested, 0)
		c.metrics.ReadReleased(verb, requested, 0)
		c.metrics.Read(verb, requested, metrics.OutcomeCache)
		return fromCache, nil
	}
	start := c.opts.Clock.Now()
	var vd verdict
	var err error
	if v == plan.Watch && kind == freshness.Consistent && c.opts.TimeoutAction != TimeoutReject {
		vd, err = c.driver.waitPatient(ctx)
	} else {
		vd, err = c.driver.wait(ctx, kind, minRV)
	}
	c.metrics.ReadWait(verb, requested, c.opts.Clock.Since(start))
	if err != nil {
		c.metrics.Read(verb, requested, metrics.OutcomeError)
		return 0, err
	}
	switch vd.kind {
	case verdictReleased:
		c.metrics.ReadReleased(verb, requested, vd.at.Sub(start))
		c.metrics.Read(verb, requested, metrics.OutcomeCache)
		return fromCache, nil
	case verdictFailed:
		if v == plan.Watch && c.opts.TimeoutAction != TimeoutReject {
			klog.V(2).InfoS("freshcache: revision fetch failed, failing the watch", "resource", c.cfg.GroupResource.String(), "err", vd.err)
			c.metrics.Read(verb, requested, metrics.OutcomeRejected)
			return 0, vd.err
		}
		if c.opts.TimeoutAction == TimeoutReject || zeroList(v, p) {
			klog.V(2).InfoS("freshcache: revision fetch failed, rejecting the read", "resource", c.cfg.GroupResource.String(), "err", vd.err)
			c.metrics.Read(verb, requested, metrics.OutcomeRejected)
			return 0, apierrors.NewTooManyRequests(
				fmt.Sprintf("the revision of etcd could not be fetched for a consistent read of %s: %v", c.cfg.GroupResource, vd.err),
				retryAfterSeconds)
		}
		klog.V(2).InfoS("freshcache: revision fetch failed, delegating the read to etcd", "resource", c.cfg.GroupResource.String(), "err", vd.err)
		return fromEtcd, nil
	}
	// Timed out.
	if kind == freshness.NotOlderThan {
		c.metrics.Read(verb, requested, metrics.OutcomeRejected)
		return 0, storage.NewTooLargeResourceVersionError(minRV, c.RV(), retryAfterSeconds)
	}
	if c.opts.TimeoutAction == TimeoutReject || zeroList(v, p) {
		c.metrics.Read(verb, requested, metrics.OutcomeRejected)
		return 0, apierrors.NewTooManyRequests(
			fmt.Sprintf("the watch cache of %s did not catch up with etcd within %v", c.cfg.GroupResource, c.opts.ConsistentReadTimeout),
			retryAfterSeconds)
	}
	if v == plan.Watch {
		// A patient wait times out only once its revision is known.
		c.metrics.Read(verb, requested, metrics.OutcomeRejected)
		return 0, storage.NewTooLargeResourceVersionError(uint64(vd.target), c.RV(), retryAfterSeconds)
	}
	return fromEtcd, nil
}

// zeroList: the read is an rv=0 LIST that FreshResourceVersionZero made
// wait. TimeoutFallback does not send it to etcd; it gets 429 with
// Retry-After, as with TimeoutReject.
//
// Upstream's cacher answers an rv=0 LIST from its cache and never from
// etcd, so a fallback would be etcd load that upstream does not have, and
// the costliest kind: etcd has no field index, so an rv=0 LIST of one
// node's pods becomes a range over every pod. A wait times out when etcd
// or the apiserver is slow already; with 100 hollow nodes on two cores
// those ranges fed the overload until LISTs ran into their 60 s limit
// (docs/investigations/cluster-targets.md). A 429 is an answer clients of
// rv=0 LISTs handle already: upstream gives it to them while its cache is
// not ready (cacher.go, GetList), client-go's REST client retries it after
// Retry-After, and a reflector backs off and relists. The stale cache is
// never the answer: that is kubernetes#59848. An rv=0 GET still falls
// back: it reads one key, what upstream's GET at rv="" costs every time.
// rv="" LISTs keep upstream's fallback (delegator.go, GetList).
func zeroList(v plan.Verb, p plan.Plan) bool {
	return v == plan.List && p.Zero
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
	v, err := c.driver.waitWithin(ctx, freshness.NotOlderThan, rv, timeout)
	if err != nil {
		return err
	}
	if v.kind != verdictReleased {
		return storage.NewTooLargeResourceVersionError(rv, c.RV(), retryAfterSeconds)
	}
	return nil
}
