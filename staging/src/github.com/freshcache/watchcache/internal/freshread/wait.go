package freshread

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/freshness"
	"github.com/freshcache/watchcache/internal/driver"
	"github.com/freshcache/watchcache/internal/plan"
	"github.com/freshcache/watchcache/metrics"
)

// retryAfterSeconds is the Retry-After of "too large resource version"
// and rejected consistent reads, as upstream uses.
const retryAfterSeconds = 1

// Served says where a read that needed freshness must be answered from.
type Served uint8

const (
	// FromCache means a snapshot taken from now on is fresh enough.
	FromCache Served = iota + 1
	// FromEtcd means delegate with rv="" (a quorum read), through FallBack.
	FromEtcd
)

// Config is what a Reader needs of its cache. Every field is required;
// the cache resolved its Options into them once.
type Config struct {
	Driver   *driver.Driver
	Metrics  metrics.Recorder
	Clock    clock.Clock
	Resource schema.GroupResource
	// Timeout is Options.ConsistentReadTimeout, for WaitFor and the
	// messages of rejected reads.
	Timeout time.Duration
	// Reject is Options.TimeoutAction == TimeoutReject.
	Reject bool
	// ZeroReadStaleness is Options.ZeroReadStaleness (see boundedZero).
	ZeroReadStaleness time.Duration
	// FallbackBudget is Options.FallbackBudget, resolved (see budget).
	FallbackBudget float64
	// CacheRV is the cache revision; OwnWrite the revision of the newest
	// write through the cache that etcd acknowledged; Cached how many
	// objects the cache holds now.
	CacheRV  func() uint64
	OwnWrite func() uint64
	Cached   func() int
}

// Reader carries out one cache's fresh reads. It is safe for concurrent
// use.
type Reader struct {
	cfg       Config
	fallbacks budget
}

// New returns the Reader of a cache.
func New(cfg Config) *Reader {
	return &Reader{cfg: cfg, fallbacks: budget{limit: cfg.FallbackBudget}}
}

// Wait is the freshness wait of one read: the wait itself (through the
// driver), then what plan.Wait.After decides from how it ended, and its
// metrics. When After says WaitAgain (an rv=0 LIST whose cache moved
// toward its known revision during the timeout), the read waits another
// timeout for that revision, and so on while the cache keeps moving and
// ctx lasts; read_wait_extensions_total counts each extension. p is a
// plan.Fresh plan (a Consistent read in the Machine) or a plan.NotOlder
// one (p.RV); its metrics labels come from the plan.
//
//   - FromCache: serve from a snapshot taken after the return.
//   - FromEtcd: delegate with rv="" to the underlying storage, through
//     FallBack, which counts the outcome and applies the fallback budget.
//     (A read whose consistent reads the version guard disabled is planned
//     plan.Etcd and never gets here.)
//   - an error: TooManyRequests with Retry-After, TooLargeResourceVersion,
//     the failed fetch's error (a WATCH), or ctx.Err()/ErrStopped.
func (r *Reader) Wait(ctx context.Context, v plan.Verb, p plan.Plan) (Served, error) {
	verb, requested, minRV := v.String(), p.Requested(), p.RV
	w := plan.Wait{Verb: v, Zero: p.Zero, Reject: r.cfg.Reject}
	switch p.Source {
	case plan.Fresh:
		w.Consistent = true
		if rv, ok := r.boundedZero(p); ok {
			w.Consistent, w.Bounded, minRV = false, true, rv
		}
	case plan.NotOlder:
	default:
		return 0, fmt.Errorf("watchcache: no freshness wait for a %v plan", p.Source)
	}
	m := r.cfg.Metrics
	if !w.Consistent && r.cfg.CacheRV() >= minRV {
		// The cache reached minRV already: nothing to wait for.
		m.ReadWait(verb, requested, 0)
		m.ReadReleased(verb, requested, 0)
		m.Read(verb, requested, metrics.OutcomeCache)
		return FromCache, nil
	}
	start := r.cfg.Clock.Now()
	var vd driver.Verdict
	var ending plan.Ending
	var outcome plan.Outcome
	from := r.cfg.CacheRV()
	extensions := 0
	for {
		var err error
		vd, err = r.await(ctx, w, minRV)
		if err != nil {
			m.ReadWait(verb, requested, r.cfg.Clock.Since(start))
			m.Read(verb, requested, metrics.OutcomeError)
			return 0, err
		}
		now := r.cfg.CacheRV()
		ending = endingOf(vd, from, now)
		if outcome = w.After(ending); outcome != plan.WaitAgain {
			break
		}
		// The cache moved toward the read's revision in the last timeout:
		// wait another one for that revision (known now, so as a bounded
		// read waits), measuring progress from here.
		from = now
		extensions++
		m.ReadWaitExtended(verb, requested)
		w.Consistent, w.Bounded, minRV = false, true, uint64(vd.Target)
	}
	m.ReadWait(verb, requested, r.cfg.Clock.Since(start))
	if ending == plan.FetchFailed {
		klog.V(2).InfoS("freshcache: revision fetch failed", "resource", r.cfg.Resource.String(), "verb", verb, "outcome", outcome.String(), "err", vd.Err)
	}
	switch outcome {
	case plan.ServeCache:
		m.ReadReleased(verb, requested, vd.At.Sub(start))
		m.Read(verb, requested, metrics.OutcomeCache)
		return FromCache, nil
	case plan.ServeEtcd:
		return FromEtcd, nil // FallBack counts the outcome
	}
	m.Read(verb, requested, metrics.OutcomeRejected)
	switch outcome {
	case plan.FailWithFetchError:
		return 0, vd.Err
	case plan.TooLargeForRead:
		return 0, storage.NewTooLargeResourceVersionError(minRV, r.cfg.CacheRV(), retryAfterSeconds)
	case plan.TooLargeForTarget:
		return 0, storage.NewTooLargeResourceVersionError(uint64(vd.Target), r.cfg.CacheRV(), retryAfterSeconds)
	}
	if ending == plan.FetchFailed {
		return 0, apierrors.NewTooManyRequests(
			fmt.Sprintf("the revision of etcd could not be fetched for a consistent read of %s: %v", r.cfg.Resource, vd.Err),
			retryAfterSeconds)
	}
	if extensions > 0 {
		return 0, apierrors.NewTooManyRequests(
			fmt.Sprintf("the watch cache of %s did not catch up with etcd: it moved toward the read's revision for %v, then not at all for %v",
				r.cfg.Resource, time.Duration(extensions)*r.cfg.Timeout, r.cfg.Timeout),
			retryAfterSeconds)
	}
	return 0, apierrors.NewTooManyRequests(
		fmt.Sprintf("the watch cache of %s did not catch up with etcd within %v", r.cfg.Resource, r.cfg.Timeout),
		retryAfterSeconds)
}

// await is one round of a read's freshness wait in the driver.
func (r *Reader) await(ctx context.Context, w plan.Wait, minRV uint64) (driver.Verdict, error) {
	switch {
	case w.Patient():
		return r.cfg.Driver.WaitPatient(ctx)
	case w.Consistent:
		return r.cfg.Driver.Wait(ctx, freshness.Consistent, minRV)
	}
	return r.cfg.Driver.Wait(ctx, freshness.NotOlderThan, minRV)
}

// endingOf turns a driver's verdict into plan's ending. A timeout is
// TimedOutCatchingUp when the read's revision was known (etcd answered
// it) and the cache revision moved from from to now during the round.
func endingOf(vd driver.Verdict, from, now uint64) plan.Ending {
	switch vd.Kind {
	case driver.Released:
		return plan.Released
	case driver.Failed:
		return plan.FetchFailed
	}
	if vd.Target > 0 && now > from {
		return plan.TimedOutCatchingUp
	}
	return plan.TimedOut
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
func (r *Reader) boundedZero(p plan.Plan) (uint64, bool) {
	if !p.Zero || r.cfg.ZeroReadStaleness <= 0 || r.cfg.Driver.Source() == nil {
		return 0, false
	}
	rv, ok := r.cfg.Driver.Source().RecentRevision(r.cfg.ZeroReadStaleness)
	if !ok || rv <= 0 {
		return 0, false
	}
	// Not older than a write of this resource that this apiserver
	// acknowledged before the read arrived: a client that wrote through
	// it, then reads at rv=0, sees its write, as with rv="". The cache
	// holds such a revision whole the moment its event arrives, so this
	// costs at most that event's delay, never a progress round trip.
	return max(uint64(rv), r.cfg.OwnWrite()), true
}

// WaitFor blocks until the cache revision is at least rv, without
// metrics: for Exact LISTs and internal callers (size estimation). It
// returns TooLargeResourceVersion after timeout (on the cache's clock), as
// upstream does after its 3s; zero means ConsistentReadTimeout.
func (r *Reader) WaitFor(ctx context.Context, rv uint64, timeout time.Duration) error {
	if r.cfg.CacheRV() >= rv {
		return nil
	}
	if timeout == 0 {
		timeout = r.cfg.Timeout
	}
	v, err := r.cfg.Driver.WaitWithin(ctx, freshness.NotOlderThan, rv, timeout)
	if err != nil {
		return err
	}
	if v.Kind != driver.Released {
		return storage.NewTooLargeResourceVersionError(rv, r.cfg.CacheRV(), retryAfterSeconds)
	}
	return nil
}
