package oracle

// Holding a new round for the next write (Options.WriteHold): the
// write-gap estimate and the decision to hold. doc.go, "Holding a read for
// the next write", says why.

import (
	"time"

	"github.com/freshcache/watchcache/metrics"
)

// DefaultWriteHold is the bound on Options.WriteHold when it is zero. A
// hold of twice the mean write gap finds a write about 86% of the time
// when writes arrive as a Poisson stream, so this takes the hold when the
// process writes at least about 100 times a second; at 1,000 kwok nodes
// an apiserver writes about that often (leases, node status, churn). It
// costs a held read at most this much, against a fetch and often a
// progress request saved.
const DefaultWriteHold = 20 * time.Millisecond

// minWritesForHold is how many writes the Oracle must have seen before
// their mean gap is trusted to decide a hold.
const minWritesForHold = 8

// maybeHoldLocked holds a round just created, if the Oracle is idle and
// this process writes often enough (see Options.WriteHold): its fetch
// waits for the hold to end, unless a write starts first and covers it.
func (o *Oracle) maybeHoldLocked() {
	if o.mu.closed || o.mu.inFlight != nil || o.mu.deferred != nil {
		return
	}
	if hold := o.holdLocked(o.now()); hold > 0 {
		o.mu.holding = true
		o.armWaitLocked(hold)
		o.holds.Add(1)
	}
}

// holdLocked is the hold for a new round: twice the mean gap between
// writes, or zero when that is above the bound. The gap since the latest
// write counts as a gap, so that a process whose writes stopped stops
// holding at once.
func (o *Oracle) holdLocked(now time.Time) time.Duration {
	bound := o.opts.WriteHold
	if bound < 0 || o.mu.writesSeen < minWritesForHold {
		return 0
	}
	if bound == 0 {
		bound = DefaultWriteHold
	}
	hold := 2 * max(o.mu.writeGap, now.Sub(o.mu.lastWrite))
	if hold > bound {
		return 0
	}
	return max(hold, time.Microsecond)
}

// noteWriteLocked feeds a write's start into the write-gap estimate.
func (o *Oracle) noteWriteLocked(now time.Time) {
	if o.mu.writesSeen > 0 {
		gap := max(now.Sub(o.mu.lastWrite), 0)
		if o.mu.writesSeen == 1 {
			o.mu.writeGap = gap
		} else {
			o.mu.writeGap += (gap - o.mu.writeGap) / 8
		}
	}
	o.mu.lastWrite = now
	o.mu.writesSeen = min(o.mu.writesSeen+1, minWritesForHold)
}

// armWaitLocked starts the timer of a hold or of a wait for writes
// (scheduleLocked), numbered so that its callback ends that wait only. A
// timer whose Stop came too late (it fired, and its callback waits for
// mu while stopWaitLocked runs and a newer hold is armed) must not end
// the newer one: it would send that round's fetch early, count the hold
// as expired and lose the newer timer, so that nothing stops it.
func (o *Oracle) armWaitLocked(d time.Duration) {
	o.mu.waitGen++
	gen := o.mu.waitGen
	o.mu.deferred = o.afterFunc(d, func() { o.waitEnded(gen) })
}

// waitEnded ends the wait for writes, or the hold, numbered gen, which
// lasted the whole bound, unless it was stopped or replaced since.
func (o *Oracle) waitEnded(gen uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.deferred == nil || o.mu.waitGen != gen {
		return
	}
	o.mu.deferred = nil
	if o.mu.holding {
		o.mu.holding = false
		o.opts.Recorder.HoldEnded(metrics.HoldExpired)
	}
	o.scheduleLocked(false)
}

// stopWaitLocked stops the hold or the wait for writes, if any. Its timer
// may have fired already; waitEnded then finds it stale.
func (o *Oracle) stopWaitLocked() {
	if o.mu.deferred != nil {
		o.mu.deferred.Stop()
		o.mu.deferred = nil
	}
	o.mu.holding = false
}
