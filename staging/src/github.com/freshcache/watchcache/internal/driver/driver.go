package driver

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/freshness"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

// Source hands out etcd revisions for consistent reads; it has the
// methods of watchcache.RevisionSource, whose doc says what they promise.
// An error wrapping oracle.ErrFetchTimedOut from RevisionFor means etcd
// gave no answer within the source's time limit, as opposed to refusing:
// a patient read asks again instead of failing.
type Source interface {
	RevisionFor(ctx context.Context, reads int) (int64, error)
	RecentRevision(maxAge time.Duration) (int64, bool)
}

// TraceRegion names the execution-trace region (runtime/trace) around a
// read's wait (watchcache.TraceRegionWait).
const TraceRegion = "freshcache.wait"

// ErrStopped is what a wait returns once the cache has stopped
// (watchcache.ErrStopped).
var ErrStopped = errors.New("watchcache: cache stopped")

// VerdictKind is how the Machine resolved a read.
type VerdictKind uint8

// How a wait ended.
const (
	Released VerdictKind = iota + 1 // serve from a snapshot taken now
	Failed                          // the covering revision fetch failed
	TimedOut                        // the deadline passed first
)

// Verdict is how a wait ended.
type Verdict struct {
	Kind VerdictKind
	// RV is the cache revision at release; Target what the read needed.
	RV, Target int64
	Err        error // Failed: wraps freshness.ErrFetchFailed
	// At is when the Machine released the read (Released only), on the
	// driver's clock. The reader runs again some time later: the
	// difference is its wait for a CPU, which read_release_seconds leaves
	// out.
	At time.Time
}

// Driver is the I/O shell around one cache's freshness.Machine (see the
// freshness package's caller duties, which it carries out):
//
//   - readers call Wait (or WaitPatient, a watch's wait), which registers
//     a read and selects on a channel of its own, ctx.Done() and stop: no
//     goroutine per waiter;
//   - revision fetches go to the Source, one goroutine per fetch
//     (at most one in flight per cache, by the Machine's rule);
//   - progress requests go to the cache's own watch stream, one goroutine
//     per request (at most one in flight);
//   - the reflector reports applied events and progress notifications;
//   - one goroutine (Run) owns the single timer, armed at the earliest of
//     the reads' deadlines and the progress-request stall time.
//
// Locking: mu guards the Machine and everything under it. It is a leaf
// lock: nothing else is locked while it is held, and the only operations
// under it are Machine calls, buffered channel sends that cannot block
// and goroutine starts.
type Driver struct {
	source   Source // nil: consistent reads are never registered
	progress func(ctx context.Context) error
	clock    clock.Clock
	timeout  time.Duration
	rec      metrics.Recorder
	name     string
	// noProgress: progress notifications are not trusted (Config).
	noProgress bool
	// settle: Config.Settle, or nil.
	settle func(ctx context.Context, rev int64)
	// panicOnBug: Config.PanicOnBug.
	panicOnBug bool
	// lastRev is the newest revision a fetch returned: no read waits for
	// more.
	lastRev atomic.Int64

	stop <-chan struct{}
	// ctx is cancelled when the cache stops; fetches and progress requests
	// run under it.
	ctx    context.Context
	cancel context.CancelFunc
	// kick wakes run to re-arm the timer (capacity 1, never blocks).
	kick chan struct{}
	// wg counts fetch and progress goroutines, so that Stop can wait.
	wg sync.WaitGroup

	mu struct {
		sync.Mutex
		m       *freshness.Machine
		waiters map[freshness.ReadID]chan Verdict
		nextID  freshness.ReadID
		// armed is the wake-up time run's timer is set to; zero if none.
		armed   time.Time
		stopped bool
	}
}

// Config is what a driver is built from.
type Config struct {
	// Source fetches revisions; nil means consistent reads never register.
	Source Source
	// Progress sends a progress request on the cache's watch stream.
	Progress func(context.Context) error
	Clock    clock.Clock
	// Timeout is every read's deadline from its arrival; 0 means none.
	Timeout time.Duration
	Metrics metrics.Recorder
	// Name is the resource, for logs.
	Name string
	// NoProgress: the cache's progress notifications cannot be trusted
	// (etcd version guard), so no wait may rely on one: the Machine never
	// asks for a progress request and waits end by events or deadlines.
	NoProgress bool
	// Settle, if set, is called with each revision a fetch returns before
	// the Machine hears of it, and with the revision a NotOlderThan read
	// waits for before the read is registered: it may bring the cache to
	// the revision without a progress request (the cache's settle), and
	// then calls Advanced. It returns at once for a revision the cache
	// holds, and otherwise waits briefly at most.
	Settle func(ctx context.Context, rev int64)
	// Stop is the cache's stop channel.
	Stop <-chan struct{}
	// PanicOnBug: a Machine input the Machine refuses (a broken caller
	// duty) panics instead of being logged and counted; the invariants
	// build sets it.
	PanicOnBug bool
}

// New returns a Driver for cfg; Run must run for it to time reads out.
func New(cfg Config) *Driver {
	m, _ := freshness.New(freshness.Options{NoProgress: cfg.NoProgress}) // valid: no initial revision
	d := &Driver{source: cfg.Source, progress: cfg.Progress, clock: cfg.Clock, timeout: cfg.Timeout, rec: cfg.Metrics,
		name: cfg.Name, noProgress: cfg.NoProgress, settle: cfg.Settle, stop: cfg.Stop, panicOnBug: cfg.PanicOnBug, kick: make(chan struct{}, 1)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.mu.m = m
	d.mu.waiters = make(map[freshness.ReadID]chan Verdict)
	return d
}

// Wait registers a read and blocks until the Machine resolves it, ctx is
// done (ctx.Err()) or the cache stops (ErrStopped). kind is
// freshness.Consistent or freshness.NotOlderThan (with minRV). The read
// times out after the driver's timeout (ConsistentReadTimeout).
func (d *Driver) Wait(ctx context.Context, kind freshness.Kind, minRV uint64) (Verdict, error) {
	return d.WaitWithin(ctx, kind, minRV, d.timeout)
}

// WaitWithin is Wait with its own timeout, on the driver's clock; zero
// means none.
func (d *Driver) WaitWithin(ctx context.Context, kind freshness.Kind, minRV uint64, timeout time.Duration) (Verdict, error) {
	rd := freshness.Read{Kind: kind, MinRV: int64(minRV)}
	if timeout > 0 {
		rd.Deadline = d.clock.Now().Add(timeout)
	}
	if kind == freshness.NotOlderThan && d.settle != nil {
		// The revision is known already, so no fetch will bring it to
		// settle: without this, a cache that receives no events of its
		// own (the churn has stopped) waits for a progress notification
		// that the ledger could have spared.
		d.settle(ctx, int64(minRV))
	}
	return d.await(ctx, rd)
}

// WaitPatient is a consistent wait as upstream's cacher does it for a
// watch: the revision is awaited for as long as ctx lasts, through fetches
// that end unanswered (freshness.Read.CatchUp), and only then does the
// driver's timeout bound the wait for the cache to reach it. A fetch that
// fails, rather than going unanswered, fails it as it does any read. The
// driver's timeout must be positive (the cache's always is).
func (d *Driver) WaitPatient(ctx context.Context) (Verdict, error) {
	return d.await(ctx, freshness.Read{Kind: freshness.Consistent, CatchUp: d.timeout})
}

// await registers rd (its ID assigned here) and blocks until the Machine
// resolves it, ctx is done or the cache stops.
func (d *Driver) await(ctx context.Context, rd freshness.Read) (Verdict, error) {
	if rd.Kind == freshness.Consistent && d.source == nil {
		return Verdict{}, errors.New("watchcache: consistent read without a revision source")
	}
	defer trace.StartRegion(ctx, TraceRegion).End()
	defer metrics.BeginWait(ctx)()
	ch := make(chan Verdict, 1)
	d.mu.Lock()
	if d.mu.stopped {
		d.mu.Unlock()
		return Verdict{}, ErrStopped
	}
	d.mu.nextID++
	id := d.mu.nextID
	rd.ID = id
	if err := d.mu.m.ReadArrived(rd); err != nil {
		d.mu.Unlock()
		return Verdict{}, fmt.Errorf("watchcache: %w", err)
	}
	d.mu.waiters[id] = ch
	d.processLocked()
	d.mu.Unlock()

	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
	case <-d.stop:
	}
	d.mu.Lock()
	if d.mu.m.ReadCancelled(id) {
		delete(d.mu.waiters, id)
	}
	// Otherwise the verdict is in ch already (resolutions are delivered
	// under mu); the read is abandoned either way.
	d.mu.Unlock()
	if ctx.Err() != nil {
		return Verdict{}, ctx.Err()
	}
	return Verdict{}, ErrStopped
}

// Applied reports that every event up to rv is in the published state.
// It returns, while reads still wait for the cache, a revision at or
// beyond every one of theirs (the newest a fetch returned), else 0.
func (d *Driver) Applied(rv uint64) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.m.EventApplied(int64(rv))
	d.processLocked()
	if d.mu.m.Status().Waiting == 0 {
		return 0
	}
	return d.lastRev.Load()
}

// RevisionPending reports events of rv that nothing proves complete yet
// (freshness.Machine.RevisionPending): the Machine asks for a progress
// request unless one is in flight. It never blocks on I/O.
func (d *Driver) RevisionPending(rv uint64) {
	d.mu.Lock()
	d.mu.m.RevisionPending(int64(rv))
	d.processLocked()
	d.mu.Unlock()
}

// ProgressNotified reports a progress notification at rv (possibly at or
// below the cache revision): it also ends the progress request in flight.
func (d *Driver) ProgressNotified(rv uint64) { d.notified(rv, true) }

// Advanced reports that the cache moved to rv without a progress
// notification (the cache's advance): a notification as far as the Machine is
// concerned, but one that answers no progress request.
func (d *Driver) Advanced(rv uint64) { d.notified(rv, false) }

// notified tells the Machine that the cache is at rv (at least) and, if
// answered, that the progress request in flight has its answer.
func (d *Driver) notified(rv uint64, answered bool) {
	d.mu.Lock()
	d.mu.m.ProgressNotified(int64(rv))
	if answered {
		d.mu.m.ProgressAnswered()
	}
	d.processLocked()
	d.mu.Unlock()
}

// RequestProgress sends a progress request on the cache's stream, unless
// one is in flight already: that one answers the caller too. It returns
// the send's error. Either way the notification reaches the cache (and its
// watchers, as a bookmark) through the reflector.
func (d *Driver) RequestProgress(ctx context.Context) error {
	if d.noProgress {
		// Nothing here waits for notifications; pass the request on.
		return d.progress(ctx)
	}
	d.mu.Lock()
	if d.mu.stopped {
		d.mu.Unlock()
		return ErrStopped
	}
	if err := d.mu.m.ProgressRequestSent(d.clock.Now()); err != nil {
		d.mu.Unlock()
		return nil // in flight
	}
	d.rec.ProgressRequest()
	d.rearmLocked()
	d.mu.Unlock()
	return d.progress(ctx)
}

// Status returns the Machine's status (tests and debugging).
func (d *Driver) Status() freshness.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.m.Status()
}

// processLocked carries out every Output until the Machine has nothing more
// to ask, then re-arms the timer if needed.
func (d *Driver) processLocked() {
	m := d.mu.m
	for m.HasOutput() {
		rd := m.Output()
		var at time.Time // one clock read per batch of releases
		if len(rd.Released) > 0 {
			at = d.clock.Now()
		}
		for _, r := range rd.Released {
			d.deliverLocked(r.ID, Verdict{Kind: Released, RV: r.RV, Target: r.Target, At: at})
		}
		for _, f := range rd.Failed {
			d.deliverLocked(f.ID, Verdict{Kind: Failed, Err: f.Err})
		}
		for _, to := range rd.TimedOut {
			d.deliverLocked(to.ID, Verdict{Kind: TimedOut, Target: to.Target})
		}
		if d.mu.stopped {
			// No new I/O once stopped; waiters leave through stop. The
			// Machine keeps asking for the fetch or progress request that
			// a still-registered read needs, and nobody will send it, so
			// looping on HasOutput would spin with mu held (and hang
			// shutdown, which waits for this goroutine). One Output has
			// handed out every resolution: stop here.
			break
		}
		if rd.IssueFetch {
			// FetchIssued before the request leaves: every read it covers
			// arrived before the fetch (freshness caller duty 2c).
			if _, err := m.FetchIssued(); err != nil {
				d.bug(err)
			} else {
				reads := m.Status().Covered
				d.wg.Add(1)
				go metrics.Labeled(metrics.ProfileFetch, func() { d.fetch(reads) })
			}
		}
		if rd.SendProgress {
			if err := m.ProgressRequestSent(d.clock.Now()); err != nil {
				d.bug(err)
			} else {
				d.sendProgressLocked()
			}
		}
	}
	d.rearmLocked()
}

func (d *Driver) deliverLocked(id freshness.ReadID, v Verdict) {
	if ch, ok := d.mu.waiters[id]; ok {
		delete(d.mu.waiters, id)
		ch <- v // capacity 1, one verdict per read
	}
}

func (d *Driver) fetch(reads int) {
	defer d.wg.Done()
	rev, err := d.source.RevisionFor(d.ctx, reads)
	if err == nil && d.settle != nil {
		if rev > d.lastRev.Load() {
			d.lastRev.Store(rev) // only fetch goroutines write it, one at a time
		}
		d.settle(d.ctx, rev)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err == nil:
		err = d.mu.m.FetchAnswered(rev, d.clock.Now())
	case errors.Is(err, oracle.ErrFetchTimedOut) && d.ctx.Err() == nil:
		// Held, not refused: patient reads ask again (the Machine
		// requests the next fetch at once; the source's time limit
		// paces the rounds).
		err = d.mu.m.FetchUnanswered(err)
	default:
		err = d.mu.m.FetchFailed(err)
	}
	if err != nil {
		d.bug(err)
	}
	d.processLocked()
}

// bug reports a Machine input the Machine refused: the driver broke one of
// its duties (freshness/doc.go). The invariants build panics; production
// logs it and counts it, and carries on: the Machine's state did not
// change.
func (d *Driver) bug(err error) {
	if d.panicOnBug {
		panic(fmt.Sprintf("watchcache: freshness driver bug (%s): %v", d.name, err))
	}
	klog.ErrorS(err, "freshcache: freshness driver bug", "resource", d.name)
	d.rec.ProtocolError()
}

func (d *Driver) sendProgressLocked() {
	d.rec.ProgressRequest()
	d.wg.Add(1)
	go metrics.Labeled(metrics.ProfileProgress, func() {
		defer d.wg.Done()
		// A failed send is retried once the Machine counts it stalled,
		// not at once: an error here usually repeats (stream down).
		if err := d.progress(d.ctx); err != nil && d.ctx.Err() == nil {
			klog.V(4).InfoS("freshcache: progress request failed", "resource", d.name, "err", err)
		}
	})
}

// wakeLocked is when run must next call Tick (the Machine's NextDeadline:
// a read's deadline or a stalled progress request), or zero.
func (d *Driver) wakeLocked() time.Time {
	next, ok := d.mu.m.NextDeadline()
	if !ok {
		return time.Time{}
	}
	return next
}

// rearmLocked wakes run when the wake-up time moved earlier than the armed
// one. A later wake-up needs no kick: the timer fires early, finds nothing
// due and re-arms.
func (d *Driver) rearmLocked() {
	next := d.wakeLocked()
	if next.IsZero() {
		return
	}
	if d.mu.armed.IsZero() || next.Before(d.mu.armed) {
		d.mu.armed = next
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
}

// Run owns the timer until stop is closed.
func (d *Driver) Run() {
	t := d.clock.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			d.shutdown()
			return
		case <-d.kick:
		case <-t.C():
			d.mu.Lock()
			now := d.clock.Now()
			inFlight := d.mu.m.Status().ProgressInFlight
			d.mu.m.Tick(now)
			if inFlight && !d.mu.m.Status().ProgressInFlight {
				// Only a stall ends a progress request in Tick.
				d.rec.ProgressStalled()
			}
			d.mu.armed = time.Time{}
			d.processLocked()
			d.mu.Unlock()
		}
		d.mu.Lock()
		next := d.wakeLocked()
		d.mu.armed = next
		d.mu.Unlock()
		if !next.IsZero() {
			t.Stop()
			t.Reset(max(next.Sub(d.clock.Now()), 0))
		}
	}
}

// shutdown stops new I/O, cancels what is in flight and waits for it.
func (d *Driver) shutdown() {
	d.mu.Lock()
	d.mu.stopped = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// Source is the revision source the driver fetches from, or nil.
func (d *Driver) Source() Source { return d.source }
