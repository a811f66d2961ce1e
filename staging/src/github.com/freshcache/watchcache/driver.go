package watchcache

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

// RevisionSource hands out etcd revisions for consistent reads.
// *oracle.Oracle implements it: RevisionFor returns a revision R from a
// linearizable fetch issued after the call began, coalesced with every
// other caller (one fetch in flight per etcd cluster), or from a write of
// this process sent after it began (WriteAnnouncer); reads is how many
// client reads the call stands for, for the coalescing metrics. An error
// wrapping oracle.ErrFetchTimedOut says etcd gave no answer within the
// source's own time limit (at least a round trip), as opposed to refusing:
// a watch waiting for its revision asks again instead of failing.
type RevisionSource interface {
	RevisionFor(ctx context.Context, reads int) (int64, error)
}

// TraceRegionWait names the execution-trace region (runtime/trace) around a
// read's freshness wait: from registering with the Machine until the reader
// runs again with a verdict. The reader blocks inside it, so a trace shows
// both when the driver released it and when it got a CPU back.
// freshcache-bench trace-wait splits the wait at that point.
const TraceRegionWait = "freshcache.wait"

// verdictKind is how the Machine resolved a read.
type verdictKind uint8

const (
	verdictReleased verdictKind = iota + 1 // serve from a snapshot taken now
	verdictFailed                          // the covering revision fetch failed
	verdictTimedOut                        // the deadline passed first
)

type verdict struct {
	kind verdictKind
	// rv is the cache revision at release; target what the read needed.
	rv, target int64
	err        error // verdictFailed: wraps freshness.ErrFetchFailed
	// at is when the Machine released the read (verdictReleased only), on
	// the driver's clock. The reader runs again some time later: the
	// difference is its wait for a CPU, which read_release_seconds leaves
	// out.
	at time.Time
}

// driver is the I/O shell around one cache's freshness.Machine (see the
// freshness package's caller duties, which it carries out):
//
//   - readers call wait (or waitPatient, a watch's wait), which registers
//     a read and selects on a channel of its own, ctx.Done() and stop: no
//     goroutine per waiter;
//   - revision fetches go to the RevisionSource, one goroutine per fetch
//     (at most one in flight per cache, by the Machine's rule);
//   - progress requests go to the cache's own watch stream, one goroutine
//     per request (at most one in flight);
//   - the reflector reports applied events and progress notifications;
//   - one goroutine (run) owns the single timer, armed at the earliest of
//     the reads' deadlines and the progress-request stall time.
//
// Locking: mu guards the Machine and everything under it. It is a leaf
// lock: nothing else is locked while it is held, and the only operations
// under it are Machine calls, buffered channel sends that cannot block
// and goroutine starts.
type driver struct {
	source   RevisionSource // nil: consistent reads are never registered
	progress func(ctx context.Context) error
	clock    clock.Clock
	timeout  time.Duration
	rec      metrics.Recorder
	name     string
	// noProgress: progress notifications are not trusted (driverConfig).
	noProgress bool
	// settle: driverConfig.Settle, or nil.
	settle func(ctx context.Context, rev int64)
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
		waiters map[freshness.ReadID]chan verdict
		nextID  freshness.ReadID
		// armed is the wake-up time run's timer is set to; zero if none.
		armed   time.Time
		stopped bool
	}
}

// driverConfig is what a driver is built from.
type driverConfig struct {
	// Source fetches revisions; nil means consistent reads never register.
	Source RevisionSource
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
	// the Machine hears of it: it may bring the cache to the revision
	// without a progress request (Cache.settle), and then calls advanced.
	Settle func(ctx context.Context, rev int64)
	// Stop is the cache's stop channel.
	Stop <-chan struct{}
}

func newDriver(cfg driverConfig) *driver {
	m, _ := freshness.New(freshness.Options{NoProgress: cfg.NoProgress}) // valid: no initial revision
	d := &driver{source: cfg.Source, progress: cfg.Progress, clock: cfg.Clock, timeout: cfg.Timeout, rec: cfg.Metrics,
		name: cfg.Name, noProgress: cfg.NoProgress, settle: cfg.Settle, stop: cfg.Stop, kick: make(chan struct{}, 1)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.mu.m = m
	d.mu.waiters = make(map[freshness.ReadID]chan verdict)
	return d
}

// wait registers a read and blocks until the Machine resolves it, ctx is
// done (ctx.Err()) or the cache stops (ErrStopped). kind is
// freshness.Consistent or freshness.NotOlderThan (with minRV). The read
// times out after the driver's timeout (ConsistentReadTimeout).
func (d *driver) wait(ctx context.Context, kind freshness.Kind, minRV uint64) (verdict, error) {
	return d.waitWithin(ctx, kind, minRV, d.timeout)
}

// waitWithin is wait with its own timeout, on the driver's clock; zero
// means none.
func (d *driver) waitWithin(ctx context.Context, kind freshness.Kind, minRV uint64, timeout time.Duration) (verdict, error) {
	rd := freshness.Read{Kind: kind, MinRV: int64(minRV)}
	if timeout > 0 {
		rd.Deadline = d.clock.Now().Add(timeout)
	}
	return d.await(ctx, rd)
}

// waitPatient is a consistent wait as upstream's cacher does it for a
// watch: the revision is awaited for as long as ctx lasts, through fetches
// that end unanswered (freshness.Read.CatchUp), and only then does the
// driver's timeout bound the wait for the cache to reach it. A fetch that
// fails, rather than going unanswered, fails it as it does any read. The
// driver's timeout must be positive (the cache's always is).
func (d *driver) waitPatient(ctx context.Context) (verdict, error) {
	return d.await(ctx, freshness.Read{Kind: freshness.Consistent, CatchUp: d.timeout})
}

// await registers rd (its ID assigned here) and blocks until the Machine
// resolves it, ctx is done or the cache stops.
func (d *driver) await(ctx context.Context, rd freshness.Read) (verdict, error) {
	if rd.Kind == freshness.Consistent && d.source == nil {
		return verdict{}, errors.New("watchcache: consistent read without a revision source")
	}
	defer trace.StartRegion(ctx, TraceRegionWait).End()
	defer metrics.BeginWait(ctx)()
	ch := make(chan verdict, 1)
	d.mu.Lock()
	if d.mu.stopped {
		d.mu.Unlock()
		return verdict{}, ErrStopped
	}
	d.mu.nextID++
	id := d.mu.nextID
	rd.ID = id
	if err := d.mu.m.ReadArrived(rd); err != nil {
		d.mu.Unlock()
		return verdict{}, fmt.Errorf("watchcache: %w", err)
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
		return verdict{}, ctx.Err()
	}
	return verdict{}, ErrStopped
}

// applied reports that every event up to rv is in the published state.
// It returns, while reads still wait for the cache, a revision at or
// beyond every one of theirs (the newest a fetch returned), else 0.
func (d *driver) applied(rv uint64) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.m.EventApplied(int64(rv))
	d.processLocked()
	if d.mu.m.Status().Waiting == 0 {
		return 0
	}
	return d.lastRev.Load()
}

// revisionPending reports events of rv that nothing proves complete yet
// (freshness.Machine.RevisionPending): the Machine asks for a progress
// request unless one is in flight. It never blocks on I/O.
func (d *driver) revisionPending(rv uint64) {
	d.mu.Lock()
	d.mu.m.RevisionPending(int64(rv))
	d.processLocked()
	d.mu.Unlock()
}

// progressNotified reports a progress notification at rv (possibly at or
// below the cache revision): it also ends the progress request in flight.
func (d *driver) progressNotified(rv uint64) { d.notified(rv, true) }

// advanced reports that the cache moved to rv without a progress
// notification (Cache.advance): a notification as far as the Machine is
// concerned, but one that answers no progress request.
func (d *driver) advanced(rv uint64) { d.notified(rv, false) }

// notified tells the Machine that the cache is at rv (at least) and, if
// answered, that the progress request in flight has its answer.
func (d *driver) notified(rv uint64, answered bool) {
	d.mu.Lock()
	d.mu.m.ProgressNotified(int64(rv))
	if answered {
		d.mu.m.ProgressAnswered()
	}
	d.processLocked()
	d.mu.Unlock()
}

// requestProgress sends a progress request on the cache's stream, unless
// one is in flight already: that one answers the caller too. It returns
// the send's error. Either way the notification reaches the cache (and its
// watchers, as a bookmark) through the reflector.
func (d *driver) requestProgress(ctx context.Context) error {
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

// status returns the Machine's status (tests and debugging).
func (d *driver) status() freshness.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.m.Status()
}

// processLocked carries out every Output until the Machine has nothing more
// to ask, then re-arms the timer if needed.
func (d *driver) processLocked() {
	m := d.mu.m
	for m.HasOutput() {
		rd := m.Output()
		var at time.Time // one clock read per batch of releases
		if len(rd.Released) > 0 {
			at = d.clock.Now()
		}
		for _, r := range rd.Released {
			d.deliverLocked(r.ID, verdict{kind: verdictReleased, rv: r.RV, target: r.Target, at: at})
		}
		for _, f := range rd.Failed {
			d.deliverLocked(f.ID, verdict{kind: verdictFailed, err: f.Err})
		}
		for _, to := range rd.TimedOut {
			d.deliverLocked(to.ID, verdict{kind: verdictTimedOut, target: to.Target})
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

func (d *driver) deliverLocked(id freshness.ReadID, v verdict) {
	if ch, ok := d.mu.waiters[id]; ok {
		delete(d.mu.waiters, id)
		ch <- v // capacity 1, one verdict per read
	}
}

func (d *driver) fetch(reads int) {
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
func (d *driver) bug(err error) {
	if invariantsEnabled {
		panic(fmt.Sprintf("watchcache: freshness driver bug (%s): %v", d.name, err))
	}
	klog.ErrorS(err, "freshcache: freshness driver bug", "resource", d.name)
	d.rec.ProtocolError()
}

func (d *driver) sendProgressLocked() {
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
func (d *driver) wakeLocked() time.Time {
	next, ok := d.mu.m.NextDeadline()
	if !ok {
		return time.Time{}
	}
	return next
}

// rearmLocked wakes run when the wake-up time moved earlier than the armed
// one. A later wake-up needs no kick: the timer fires early, finds nothing
// due and re-arms.
func (d *driver) rearmLocked() {
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

// run owns the timer until stop is closed.
func (d *driver) run() {
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
func (d *driver) shutdown() {
	d.mu.Lock()
	d.mu.stopped = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// FreshnessStatus reports the state of the cache's freshness protocol: the
// cache revision as the Machine knows it, fetches and progress requests in
// flight, and reads waiting at each stage. For debugging and tests.
func (c *Cache) FreshnessStatus() freshness.Status { return c.driver.status() }
