package oracle

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/freshcache/watchcache/metrics"
)

// fakeClock is the Oracle's clock for the write-gap estimate. The hold's
// timer stays real: tests pick gaps that make it either far longer than
// waitLimit (a hold that must end by a write) or a few milliseconds.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

var epoch = time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)

// writesEvery announces n writes gap apart on the fake clock, with nobody
// waiting (so each only feeds the estimate), and leaves the clock at the
// last one.
func writesEvery(o *Oracle, clk *fakeClock, n int, gap time.Duration) {
	at := clk.now()
	for range n {
		at = at.Add(gap)
		clk.set(at)
		if w := o.WriteStarting(); w != nil {
			w.Failed()
		}
	}
}

// withWriteGaps gives o a fake clock and a history of n writes gap apart,
// so its hold is known, and returns the clock, left at the last write.
func withWriteGaps(o *Oracle, n int, gap time.Duration) *fakeClock {
	clk := &fakeClock{t: epoch}
	o.now = clk.now
	writesEvery(o, clk, n, gap)
	return clk
}

// allJoins signals every caller that joins a round, in flight or not.
func allJoins(o *Oracle) <-chan struct{} {
	ch := make(chan struct{}, 1024)
	o.testJoined = func(bool) { ch <- struct{}{} }
	return ch
}

func TestHoldLength(t *testing.T) {
	const bound = 20 * time.Millisecond
	for _, tc := range []struct {
		name   string
		hold   time.Duration // Options.WriteHold
		writes int
		gap    time.Duration
		idle   time.Duration // since the last write, at the read
		want   time.Duration
	}{
		{"frequent writes: twice the mean gap", bound, 20, 5 * time.Millisecond, 0, 10 * time.Millisecond},
		{"the default bound", 0, 20, 5 * time.Millisecond, 0, 10 * time.Millisecond},
		{"exactly at the bound", bound, 20, 10 * time.Millisecond, 0, bound},
		{"writes too rare for the bound", bound, 20, 11 * time.Millisecond, 0, 0},
		{"the default bound, writes too rare", 0, 20, 11 * time.Millisecond, 0, 0},
		{"too few writes to trust", bound, minWritesForHold - 1, time.Millisecond, 0, 0},
		{"writes stopped", bound, 20, time.Millisecond, 11 * time.Millisecond, 0},
		{"a pause shorter than the gap counts as the gap", bound, 20, 4 * time.Millisecond, 2 * time.Millisecond, 8 * time.Millisecond},
		{"a pause longer than the gap counts as a gap", bound, 20, time.Millisecond, 3 * time.Millisecond, 6 * time.Millisecond},
		{"holding off", -1, 20, time.Millisecond, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := buildOracle(nil, Options{WriteHold: tc.hold})
			clk := withWriteGaps(o, tc.writes, tc.gap)
			o.mu.Lock()
			got := o.holdLocked(clk.now().Add(tc.idle))
			o.mu.Unlock()
			if got != tc.want {
				t.Fatalf("hold = %v, want %v", got, tc.want)
			}
		})
	}
}

// A read that finds the Oracle idle while the process writes often is held;
// the next write covers it and answers it, and no fetch goes to etcd.
func TestHoldIsAnsweredByTheNextWrite(t *testing.T) {
	_, c := startEtcd(t)
	g := newGatedKV(c)
	// Gaps of 20 s hold for 40 s, longer than waitLimit: only the write
	// can end this hold. WriteWait keeps the write's wait from fetching.
	rec := &recorder{}
	o := newOracle(t, c, Options{WriteHold: time.Minute, WriteWait: time.Minute, Recorder: rec})
	withWriteGaps(o, 10, 20*time.Second)
	joined := allJoins(o)

	a := goRevision(context.Background(), o)
	waitJoins(t, joined, 1)
	if n, inFlight, waiting, _ := openState(o); n != 1 || inFlight || !waiting {
		t.Fatalf("after A arrived: %d open, fetch in flight %v, waiting %v; want A held", n, inFlight, waiting)
	}
	w := o.WriteStarting()
	if w == nil {
		t.Fatal("WriteStarting returned nil while A is held")
	}
	rev := put(t, c, "/the-write")
	w.Succeeded(rev)
	if r := await(t, a); r.err != nil || r.rev != rev {
		t.Fatalf("caller A: %+v, want the write's revision %d", r, rev)
	}
	if got := g.gets.Load(); got != 0 {
		t.Fatalf("etcd saw %d revision fetches, want 0", got)
	}
	st := o.Stats()
	if st.Holds != 1 || st.HeldByWrites != 1 || st.ReadsFromWrites != 1 || st.Fetches != 0 {
		t.Fatalf("stats %+v", st)
	}
	wantHolds(t, rec, metrics.HoldWrite)
	if n, inFlight, waiting, writes := openState(o); n != 0 || inFlight || waiting || writes != 0 {
		t.Fatalf("afterwards: %d open, fetch in flight %v, waiting %v, %d writes", n, inFlight, waiting, writes)
	}
}

// A hold that finds no write, or whose write fails, or whose caller gives
// up, ends as if there had been no hold.
func TestHoldEnds(t *testing.T) {
	t.Run("no write comes: the hold's end sends the fetch", func(t *testing.T) {
		_, c := startEtcd(t)
		rec := &recorder{}
		o := newOracle(t, c, Options{WriteHold: time.Minute, Recorder: rec})
		withWriteGaps(o, 10, time.Millisecond) // a 2 ms hold
		before := put(t, c, "/before")
		r := await(t, goRevision(context.Background(), o))
		if r.err != nil || r.rev < before {
			t.Fatalf("caller: %+v, want a fetched revision >= %d", r, before)
		}
		if st := o.Stats(); st.Holds != 1 || st.HeldByWrites != 0 || st.Fetches != 1 || st.Reads != 1 {
			t.Fatalf("stats %+v", st)
		}
		wantHolds(t, rec, metrics.HoldExpired)
	})
	t.Run("the write fails: a fetch at once", func(t *testing.T) {
		_, c := startEtcd(t)
		rec := &recorder{}
		o := newOracle(t, c, Options{WriteHold: time.Minute, WriteWait: time.Minute, Recorder: rec})
		withWriteGaps(o, 10, 20*time.Second) // a 40 s hold
		joined := allJoins(o)
		a := goRevision(context.Background(), o)
		waitJoins(t, joined, 1)
		w := o.WriteStarting()
		after := put(t, c, "/after-the-hold-began")
		w.Failed()
		if r := await(t, a); r.err != nil || r.rev < after {
			t.Fatalf("caller A: %+v, want a fetched revision >= %d", r, after)
		}
		if st := o.Stats(); st.Holds != 1 || st.HeldByWrites != 1 || st.Fetches != 1 || st.ReadsFromWrites != 0 {
			t.Fatalf("stats %+v", st)
		}
		wantHolds(t, rec, metrics.HoldWrite)
	})
	t.Run("the caller gives up: nothing is fetched", func(t *testing.T) {
		_, c := startEtcd(t)
		g := newGatedKV(c)
		rec := &recorder{}
		o := newOracle(t, c, Options{WriteHold: time.Minute, Recorder: rec})
		withWriteGaps(o, 10, 20*time.Second)
		joined := allJoins(o)
		callerGivesUp(t, o, joined)
		if n, inFlight, waiting, _ := openState(o); n != 0 || inFlight || waiting {
			t.Fatalf("after A left: %d open, fetch in flight %v, waiting %v", n, inFlight, waiting)
		}
		if got := g.gets.Load(); got != 0 {
			t.Fatalf("etcd saw %d revision fetches, want 0", got)
		}
		wantHolds(t, rec, metrics.HoldAbandoned)
	})
}

func wantHolds(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	if got := rec.holdOutcomes(); !slices.Equal(got, want) {
		t.Fatalf("holds ended %q, want %q", got, want)
	}
}

// Reads that queue behind a fetch in flight are never held, so a process
// whose reads keep the Oracle busy fetches back to back as before.
func TestNoHoldBehindAFetch(t *testing.T) {
	_, c := startEtcd(t)
	g := newGatedKV(c)
	o := newOracle(t, c, Options{WriteHold: time.Minute})
	clk := withWriteGaps(o, 10, 20*time.Second) // a 40 s hold, past waitLimit
	last := clk.now()
	clk.set(last.Add(time.Hour)) // writes stopped: A is not held
	joined := joins(o)
	g.hold.Store(true)

	a := goRevision(context.Background(), o)
	first := g.next(t)
	clk.set(last) // writes frequent again: an idle Oracle would hold B
	b := goRevision(context.Background(), o)
	waitJoins(t, joined, 1)
	close(first.release)
	if r := await(t, a); r.err != nil || r.rev != first.rev {
		t.Fatalf("caller A: %+v", r)
	}
	second := g.next(t) // a hold would keep this from etcd past waitLimit
	close(second.release)
	if r := await(t, b); r.err != nil || r.rev != second.rev {
		t.Fatalf("caller B: %+v", r)
	}
	if st := o.Stats(); st.Holds != 0 || st.Fetches != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// A hold's timer that fires just as its hold is stopped (its callback then
// waits for the lock) must not end the next hold: that one keeps waiting
// for a write until its own timer fires. The test arms the timers itself
// and fires the stale one after the next hold began.
func TestStaleHoldTimer(t *testing.T) {
	rec := &recorder{}
	o, err := NewFromFunc(func(context.Context) (int64, error) { return 7, nil }, Options{WriteHold: time.Minute, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	var mu sync.Mutex
	var timers []func()
	o.afterFunc = func(_ time.Duration, f func()) *time.Timer {
		mu.Lock()
		defer mu.Unlock()
		timers = append(timers, f)
		return time.NewTimer(time.Hour) // stoppable; never fires in the test
	}
	fire := func(i int) {
		mu.Lock()
		f := timers[i]
		mu.Unlock()
		f()
	}
	withWriteGaps(o, 10, time.Millisecond)
	joined := allJoins(o)

	callerGivesUp(t, o, joined)
	b := goRevision(context.Background(), o)
	waitJoins(t, joined, 1)
	if n, inFlight, waiting, _ := openState(o); n != 1 || inFlight || !waiting {
		t.Fatalf("after B arrived: %d open, fetch in flight %v, waiting %v; want B held", n, inFlight, waiting)
	}
	fire(0) // A's timer, stale
	if n, inFlight, waiting, _ := openState(o); n != 1 || inFlight || !waiting {
		t.Fatalf("after A's timer fired: %d open, fetch in flight %v, waiting %v; want B still held", n, inFlight, waiting)
	}
	fire(1) // B's own
	if r := await(t, b); r.err != nil || r.rev != 7 {
		t.Fatalf("caller B: %+v, want the fetch's 7", r)
	}
	wantHolds(t, rec, metrics.HoldAbandoned, metrics.HoldExpired)
	if st := o.Stats(); st.Holds != 2 || st.Fetches != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// callerGivesUp starts a Revision call, cancels it once it joined a round,
// and checks that it ended with an error.
func callerGivesUp(t *testing.T, o *Oracle, joined <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := goRevision(ctx, o)
	waitJoins(t, joined, 1)
	cancel()
	if r := await(t, a); r.err == nil {
		t.Fatalf("caller A: %+v after cancel, want an error", r)
	}
}
