package oracle

// Rounds and fetches: the callers that share one answer, the fetch that
// answers them, and the bookkeeping between the two (when a fetch starts,
// what its answer releases, what a caller that gives up leaves behind).
// Everything here runs under Oracle.mu except fetch itself, which is the
// one goroutine that talks to etcd. doc.go says why a round only takes an
// answer from a request sent after all its callers joined.

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"time"

	"github.com/freshcache/watchcache/metrics"
)

// round is the callers that joined between two requests and so share the
// first answer of a request sent after all of them. rev and err are written
// before done is closed and read only after.
type round struct {
	done chan struct{}
	rev  int64
	err  error

	// Guarded by Oracle.mu.
	id       uint64
	waiters  int    // callers still waiting
	reads    int    // reads those callers stand for (RevisionFor)
	fetch    *fetch // the fetch in flight that covers it, or nil
	answered bool
}

// fetch is one revision request to etcd and the rounds open when it was
// sent.
type fetch struct {
	rounds []*round
	cancel context.CancelFunc // aborts the request
}

// scheduleLocked starts a fetch for the open rounds unless one is in flight
// or none is open.
//
// If mayWait and the open round is held for a write (maybeHoldLocked), it
// leaves the hold running. If mayWait, and every open round is covered by a
// write in flight, it waits for the writes instead, for at most the wait bound
// (Options.WriteWait): a write that succeeds answers them without a fetch,
// and one that fails calls scheduleLocked again. A round cannot be covered
// when it is created (the write that covers it starts later), so a new
// caller never waits for a write that may not come: this only happens when
// a fetch or a write has just ended.
func (o *Oracle) scheduleLocked(mayWait bool) {
	if o.mu.closed || o.mu.inFlight != nil {
		return
	}
	if len(o.mu.open) == 0 {
		if o.mu.holding {
			o.opts.Recorder.HoldEnded(metrics.HoldAbandoned)
		}
		o.stopWaitLocked()
		return
	}
	if mayWait && o.mu.holding {
		return
	}
	newest := o.mu.open[len(o.mu.open)-1].id
	if mayWait && newest <= o.coveredLocked() {
		if wait := o.writeWaitLocked(); wait > 0 {
			if o.mu.deferred == nil {
				o.armWaitLocked(wait)
			}
			return
		}
	}
	o.startLocked()
}

// coveredLocked is the newest round id a write in flight covers, or 0.
func (o *Oracle) coveredLocked() uint64 {
	var newest uint64
	for _, w := range o.mu.writes {
		newest = max(newest, w.covers)
	}
	return newest
}

func (o *Oracle) writeWaitLocked() time.Duration {
	switch {
	case o.opts.WriteWait < 0:
		return 0
	case o.opts.WriteWait > 0:
		return o.opts.WriteWait
	default:
		return o.mu.rtt
	}
}

// startLocked sends a fetch for every open round. Every caller in them
// joined under o.mu before this point, so the request goes out after all of
// them arrived.
func (o *Oracle) startLocked() {
	o.stopWaitLocked()
	f := &fetch{rounds: append([]*round(nil), o.mu.open...)}
	for _, r := range f.rounds {
		r.fetch = f
	}
	o.mu.join = nil
	o.mu.inFlight = f
	ctx, cancel := context.WithTimeout(o.ctx, o.opts.FetchTimeout)
	f.cancel = cancel
	o.wg.Add(1)
	go metrics.Labeled(metrics.ProfileFetch, func() { o.fetch(ctx, f) })
}

func (o *Oracle) fetch(ctx context.Context, f *fetch) {
	defer o.wg.Done()
	start := time.Now()
	sent := o.now()
	region := trace.StartRegion(ctx, TraceRegionFetch)
	rev, err := o.get(ctx)
	region.End()
	took := time.Since(start)
	// Before cancel: only FetchTimeout's deadline makes this
	// DeadlineExceeded (Close and leave cancel ctx).
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	f.cancel()

	o.mu.Lock()
	switch {
	case err != nil && o.mu.closed:
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	case err != nil && timedOut:
		err = fmt.Errorf("%w: %w (%v): %w", ErrFetchFailed, ErrFetchTimedOut, o.opts.FetchTimeout, err)
	case err != nil:
		err = fmt.Errorf("%w: %w", ErrFetchFailed, err)
	}
	// Counted and recorded before any caller is answered, so a caller that
	// returns sees this fetch in Stats and in the Recorder.
	reads := 0
	for _, r := range f.rounds {
		if !r.answered { // a write may have answered it first
			reads += r.reads
		}
	}
	o.fetches.Add(1)
	if err != nil {
		o.failed.Add(1)
	}
	o.reads.Add(uint64(reads))
	o.opts.Recorder.FetchDone(reads, took, err)
	for _, r := range f.rounds {
		if !r.answered {
			o.answerLocked(r, rev, err)
		}
	}
	o.mu.inFlight = nil
	if err == nil {
		o.recent.add(sent, rev)
		if o.mu.rtt == 0 {
			o.mu.rtt = took
		} else {
			o.mu.rtt += (took - o.mu.rtt) / 8
		}
	}
	o.scheduleLocked(true)
	o.mu.Unlock()
}

// answerLocked answers r with rev or err and drops it from the open rounds.
func (o *Oracle) answerLocked(r *round, rev int64, err error) {
	if err != nil {
		r.err = err
	} else {
		r.rev = rev
	}
	r.answered = true
	close(r.done)
	o.dropLocked(r)
}

// dropLocked removes r from the open rounds, and from joining.
func (o *Oracle) dropLocked(r *round) {
	if o.mu.join == r {
		o.mu.join = nil
	}
	for i, q := range o.mu.open {
		if q == r {
			o.mu.open = append(o.mu.open[:i], o.mu.open[i+1:]...)
			break
		}
	}
}

// leave is called by a caller that gave up on r. A round nobody waits for is
// dropped, and a fetch whose rounds nobody waits for is aborted: no later
// caller may use its answer anyway. It reports whether r was answered
// meanwhile.
func (o *Oracle) leave(r *round, reads int) (answered bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.answered {
		return true
	}
	r.waiters--
	r.reads -= reads
	if r.waiters > 0 {
		return false
	}
	if r.fetch == nil {
		r.answered = true // nobody reads it; its done channel stays open
		o.dropLocked(r)
		o.scheduleLocked(true)
		return false
	}
	for _, q := range r.fetch.rounds {
		if !q.answered && q.waiters > 0 {
			return false
		}
	}
	r.fetch.cancel()
	return false
}
