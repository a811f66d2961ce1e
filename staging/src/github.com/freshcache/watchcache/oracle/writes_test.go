package oracle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/freshcache/watchcache/metrics"
)

// openState reads, under the lock, what the Oracle holds between requests.
func openState(o *Oracle) (open int, inFlight, waiting bool, writes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.mu.open), o.mu.inFlight != nil, o.mu.deferred != nil, len(o.mu.writes)
}

// A write sent after callers arrived answers them with its revision, the
// one in flight with a fetch included, and the round that would have waited
// for a second fetch needs none.
func TestWriteAnswersTheRoundsItCovers(t *testing.T) {
	rec := &recorder{}
	c, g, o, joined := startGated(t, Options{Recorder: rec, WriteWait: waitLimit})

	a := goRevision(context.Background(), o)
	first := g.next(t) // fetch 1 answered by etcd, held
	before := put(t, c, "/completed-before-b")
	b := goRevision(context.Background(), o)
	waitJoins(t, joined, 1)

	w := o.WriteStarting()
	if w == nil {
		t.Fatal("WriteStarting returned nil while two callers wait")
	}
	rev := put(t, c, "/the-write")
	w.Succeeded(rev)

	for name, ch := range map[string]<-chan result{"A": a, "B": b} {
		if r := await(t, ch); r.err != nil || r.rev != rev {
			t.Fatalf("caller %s: %+v, want the write's revision %d", name, r, rev)
		}
	}
	if rev <= before {
		t.Fatalf("the write's revision %d does not cover the write B saw complete (%d)", rev, before)
	}
	close(first.release)
	waitStats(t, o, func(st Stats) bool { return st.Fetches == 1 })
	if n, inFlight, _, writes := openState(o); n != 0 || inFlight || writes != 0 {
		t.Fatalf("after the write: %d open rounds, fetch in flight %v, %d writes", n, inFlight, writes)
	}
	if got := g.gets.Load(); got != 1 {
		t.Fatalf("etcd saw %d revision fetches, want 1 (the write answered the second round)", got)
	}
	st := o.Stats()
	if st.ReadsFromWrites != 2 || st.Reads != 0 {
		t.Fatalf("stats %+v: want both reads answered by the write, none by the fetch", st)
	}
	if got := rec.answeredByWrites(); !slices.Equal(got, []int{2}) {
		t.Fatalf("recorded writes %v, want [2]", got)
	}
	if got := rec.get(); len(got) != 1 || got[0].reads != 0 {
		t.Fatalf("recorded fetches %+v, want one that answered nobody", got)
	}
}

// A caller that arrives after a write started is not answered by it: the
// write may have been committed before the caller arrived.
func TestWriteDoesNotAnswerLaterCallers(t *testing.T) {
	c, g, o, joined := startGated(t, Options{WriteWait: waitLimit})

	a := goRevision(context.Background(), o)
	first := g.next(t)
	w := o.WriteStarting()
	rev := put(t, c, "/the-write")
	after := put(t, c, "/after-the-write")
	b := goRevision(context.Background(), o) // arrives after the write started
	waitJoins(t, joined, 1)
	w.Succeeded(rev)
	if r := await(t, a); r.err != nil || r.rev != rev {
		t.Fatalf("caller A: %+v, want the write's %d", r, rev)
	}
	close(first.release)
	second := g.next(t)
	close(second.release)
	r := await(t, b)
	if r.err != nil || r.rev != second.rev || r.rev < after {
		t.Fatalf("caller B: %+v, want fetch 2's %d, covering %d", r, second.rev, after)
	}
}

// When a fetch ends and every open round is covered by a write in flight,
// the Oracle waits for the write. One that fails hands its rounds to a
// fetch at once; one that never ends, to a fetch after WriteWait.
func TestWaitForCoveringWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		end  func(*Write)
	}{
		{"the write fails", waitLimit, (*Write).Failed},
		{"the write succeeds without a revision", waitLimit, func(w *Write) { w.Succeeded(0) }},
		{"the write never ends", time.Millisecond, func(*Write) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, g, o, joined := startGated(t, Options{WriteWait: tc.wait})

			a := goRevision(context.Background(), o)
			first := g.next(t)
			b := goRevision(context.Background(), o)
			waitJoins(t, joined, 1)
			w := o.WriteStarting()
			close(first.release)
			if r := await(t, a); r.err != nil || r.rev != first.rev {
				t.Fatalf("caller A: %+v", r)
			}
			if tc.wait == waitLimit {
				// Fetch 1's end and the decision to wait happen under one
				// lock, so A's answer means the decision was made.
				if n, inFlight, waiting, _ := openState(o); n != 1 || inFlight || !waiting {
					t.Fatalf("after fetch 1: %d open, fetch in flight %v, waiting %v; want B waiting for the write", n, inFlight, waiting)
				}
			}
			after := put(t, c, "/after-the-wait-began")
			tc.end(w)
			second := g.next(t)
			close(second.release)
			r := await(t, b)
			if r.err != nil || r.rev != second.rev || r.rev < after {
				t.Fatalf("caller B: %+v, want fetch 2's %d", r, second.rev)
			}
			if st := o.Stats(); st.ReadsFromWrites != 0 {
				t.Fatalf("stats %+v: no write answered", st)
			}
		})
	}
}

func TestWriteEdges(t *testing.T) {
	_, c := startEtcd(t)
	g := newGatedKV(c)
	o := newOracle(t, c, Options{})
	if w := o.WriteStarting(); w == nil || w.covers != 0 {
		t.Fatalf("WriteStarting with nobody waiting = %+v, want a Write that covers no round", w)
	} else {
		w.Succeeded(put(t, c, "/uncovered")) // answers nobody, in flight for nobody
		if _, _, _, writes := openState(o); writes != 0 {
			t.Fatalf("%d writes in flight after an uncovered write", writes)
		}
	}
	var none *Write
	none.Succeeded(5) // a nil Write does nothing
	none.Failed()

	// Ending a write twice is harmless, and a write that ends after the
	// Oracle closed answers nobody.
	g.hold.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	a := goRevision(ctx, o)
	h := g.next(t)
	w := o.WriteStarting()
	w.Failed()
	w.Succeeded(put(t, c, "/late"))
	if _, _, _, writes := openState(o); writes != 0 {
		t.Fatalf("%d writes left in flight", writes)
	}
	cancel()
	if r := await(t, a); r.err == nil {
		t.Fatalf("caller A: %+v after cancel, want an error", r)
	}
	close(h.release)
	waitStats(t, o, func(st Stats) bool { return st.Fetches == 1 })
	w2 := o.WriteStarting() // nobody waits any more
	if w2 == nil || w2.covers != 0 {
		t.Fatalf("WriteStarting after the only caller left = %+v, want one that covers no round", w2)
	}
	w2.Failed()
	o.Close()
	if st := o.Stats(); st.ReadsFromWrites != 0 {
		t.Fatalf("stats %+v", st)
	}
	if w := o.WriteStarting(); w != nil {
		t.Fatalf("WriteStarting on a closed Oracle = %+v, want nil", w)
	}
}

// Without any gate: readers that each write and then ask for a revision,
// beside writers whose writes the Oracle is told about. Every answer covers
// the reader's own completed write, whether a fetch or a write answered it.
// It runs with the default hold, with none, and with a hold long enough
// to be taken whenever writers are active. With a hold, a last reader then
// reads alone while the writers go on: each of its reads finds the Oracle
// idle, so it is held, and the holds must have found writes that answered
// the reads (Stats, and the recorder's outcomes).
func TestConcurrentReadsAndAnnouncedWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold time.Duration
	}{
		{"default hold", 0},
		{"no hold", -1},
		{"long hold", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) { concurrentReadsAndAnnouncedWrites(t, Options{WriteHold: tc.hold}) })
	}
}

// aloneRounds is how many reads the reader alone makes.
const aloneRounds = 40

func concurrentReadsAndAnnouncedWrites(t *testing.T, opts Options) {
	const readers, writers, rounds = 32, 8, 20
	_, c := startEtcd(t)
	rec := &recorder{}
	opts.Recorder = rec
	o := newOracle(t, c, opts)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, readers*rounds+writers)
	for i := range writers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				w := o.WriteStarting()
				resp, err := c.Put(context.Background(), fmt.Sprintf("/announced/%d", i), fmt.Sprint(n))
				if err != nil {
					w.Failed()
					errs <- err
					return
				}
				if n%5 == 4 {
					w.Failed() // as if the write turned out not to count
				} else {
					w.Succeeded(resp.Header.Revision)
				}
			}
		})
	}
	var readersWG sync.WaitGroup
	for i := range readers {
		readersWG.Go(func() {
			for n := range rounds {
				if err := writeThenRead(c, o, fmt.Sprintf("/reader/%d", i), fmt.Sprint(n)); err != nil {
					errs <- fmt.Errorf("reader %d: %w", i, err)
					return
				}
			}
		})
	}
	readersWG.Wait()
	held := opts.WriteHold >= 0
	before := o.Stats()
	if held {
		for n := range aloneRounds {
			if err := writeThenRead(c, o, "/reader/alone", fmt.Sprint(n)); err != nil {
				t.Fatalf("the reader alone: %v", err)
			}
		}
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if before.Reads+before.ReadsFromWrites != readers*rounds {
		t.Fatalf("stats %+v: %d reads answered, want %d", before, before.Reads+before.ReadsFromWrites, readers*rounds)
	}
	st := o.Stats()
	if held {
		holds, byWrites := st.Holds-before.Holds, st.HeldByWrites-before.HeldByWrites
		fromWrites := st.ReadsFromWrites - before.ReadsFromWrites
		if holds == 0 || byWrites == 0 || fromWrites == 0 || !slices.Contains(rec.holdOutcomes(), metrics.HoldWrite) {
			t.Fatalf("the reader alone: %d holds, %d found a write, %d reads answered by writes (outcomes %q); want reads held and answered by writes",
				holds, byWrites, fromWrites, rec.holdOutcomes())
		}
		t.Logf("the reader alone: %d reads, %d held, %d found a write, %d answered by writes", aloneRounds, holds, byWrites, fromWrites)
	}
	// The last fetch may still be in flight after a write answered its
	// rounds; it must end and leave nothing open.
	deadline := time.Now().Add(waitLimit)
	for {
		n, inFlight, _, _ := openState(o)
		if n == 0 && !inFlight {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rounds left open, fetch in flight %v", n, inFlight)
		}
		time.Sleep(time.Millisecond)
	}
	if st.HeldByWrites > st.Holds || (opts.WriteHold < 0 && st.Holds != 0) {
		t.Fatalf("stats %+v: holds inconsistent with WriteHold %v", st, opts.WriteHold)
	}
	total := readers * rounds
	if held {
		total += aloneRounds
	}
	t.Logf("%d reads: %d by %d fetches, %d by writes; %d holds, %d found a write", total, st.Reads, st.Fetches, st.ReadsFromWrites, st.Holds, st.HeldByWrites)
}
