package driver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache/freshness"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

type unusedSource struct{}

func (unusedSource) RevisionFor(context.Context, int) (int64, error) {
	return 0, errors.New("no fetch may be issued once the driver has stopped")
}

func (unusedSource) RecentRevision(time.Duration) (int64, bool) { return 0, false }

// TestStoppedDriverDoesNotSpin: once the driver has stopped it issues no
// fetch or progress request, yet the Machine keeps asking for them while
// reads are pending. processLocked must hand out what is resolved and
// return, not loop on those requests while it holds the lock. The
// robustness run's restart-cache fault hung Cache.Stop on this: the fetch
// in flight ended after the stop, a second read was still pending (its
// goroutine had not yet seen the stop), and the fetch goroutine spun with
// the lock held, so neither the read nor shutdown could proceed. Here the
// pending reads are registered directly, as a reader that has not yet
// reacted to the stop leaves them.
func TestStoppedDriverDoesNotSpin(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(m *freshness.Machine) error
	}{
		{"fetch failed", func(m *freshness.Machine) error { return m.FetchFailed(context.Canceled) }},
		{"fetch answered above the cache", func(m *freshness.Machine) error { return m.FetchAnswered(100, time.Time{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Config{Source: unusedSource{}, Progress: func(context.Context) error { return nil }, Clock: clock.RealClock{}, Timeout: time.Minute, Metrics: metrics.Discard{}, Name: "pods", Stop: make(chan struct{})})
			d.mu.Lock()
			m := d.mu.m
			if err := m.ReadArrived(freshness.Read{ID: 1, Kind: freshness.Consistent}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.FetchIssued(); err != nil {
				t.Fatal(err)
			}
			if err := m.ReadArrived(freshness.Read{ID: 2, Kind: freshness.Consistent}); err != nil {
				t.Fatal(err)
			}
			d.mu.stopped = true
			if err := tc.end(m); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				d.processLocked()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("processLocked did not return on a stopped driver with a read pending")
			}
			if st := m.Status(); st.FetchInFlight || st.ProgressInFlight {
				t.Errorf("a stopped driver issued a request: %+v", st)
			}
			d.mu.Unlock()
		})
	}
}

// scriptedSource answers each RevisionFor with what the test sends, after
// announcing the call on calls.
type scriptedSource struct {
	calls   chan struct{}
	answers chan fetchAnswer
}

type fetchAnswer struct {
	rev int64
	err error
}

// RecentRevision answers nothing: the script decides every revision.
func (s scriptedSource) RecentRevision(time.Duration) (int64, bool) { return 0, false }

func (s scriptedSource) RevisionFor(ctx context.Context, _ int) (int64, error) {
	s.calls <- struct{}{}
	select {
	case a := <-s.answers:
		return a.rev, a.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// TestPatientWaitOutlastsUnansweredFetches drives waitPatient, a watch's
// wait, through the driver's classification of fetch outcomes: a fetch
// that ran into the source's time limit (oracle.ErrFetchTimedOut) makes
// the driver ask again and the read keep waiting, with no deadline; an
// answer starts the timeout for the cache; a refusal fails the read.
func TestPatientWaitOutlastsUnansweredFetches(t *testing.T) {
	const timeout = 100 * time.Millisecond
	src := scriptedSource{calls: make(chan struct{}), answers: make(chan fetchAnswer)}
	clk := testingclock.NewFakeClock(time.Now())
	stop := make(chan struct{})
	d := New(Config{Source: src, Progress: func(context.Context) error { return nil }, Clock: clk,
		Timeout: timeout, Metrics: metrics.Discard{}, Name: "pods", Stop: stop})
	go d.Run()
	defer close(stop)
	unanswered := fmt.Errorf("%w: %w: context deadline exceeded", oracle.ErrFetchFailed, oracle.ErrFetchTimedOut)
	refused := fmt.Errorf("%w: etcdserver: permission denied", oracle.ErrFetchFailed)

	type result struct {
		v   Verdict
		err error
	}
	patient := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			v, err := d.WaitPatient(context.Background())
			ch <- result{v, err}
		}()
		return ch
	}
	call := func(what string) {
		t.Helper()
		select {
		case <-src.calls:
		case <-time.After(30 * time.Second):
			t.Fatalf("no fetch %s", what)
		}
	}
	answer := func(a fetchAnswer) { src.answers <- a }
	verdictOf := func(ch <-chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("the patient read was never resolved")
		}
		return result{}
	}

	// Unanswered, twice: asked again each time, still waiting, no timer.
	r1 := patient()
	call("for the patient read")
	answer(fetchAnswer{err: unanswered})
	call("after the first went unanswered")
	answer(fetchAnswer{err: unanswered})
	call("after the second went unanswered")
	select {
	case r := <-r1:
		t.Fatalf("patient read resolved by unanswered fetches: %+v", r)
	default:
	}
	if st := d.Status(); st.Covered != 1 || !st.FetchInFlight {
		t.Fatalf("status %+v: want the read covered by the third fetch", st)
	}
	if next, ok := func() (time.Time, bool) { d.mu.Lock(); defer d.mu.Unlock(); return d.mu.m.NextDeadline() }(); ok {
		t.Fatalf("a deadline at %v while the read waits for its revision", next)
	}

	// Answered above the cache: now the timeout runs, from the answer.
	answer(fetchAnswer{rev: 10})
	// run arms its timer for the new deadline.
	armed, tick := time.Now().Add(30*time.Second), time.NewTicker(time.Millisecond)
	for !clk.HasWaiters() {
		if time.Now().After(armed) {
			t.Fatal("no timer armed once the revision was known")
		}
		<-tick.C
	}
	tick.Stop()
	clk.Step(timeout)
	if r := verdictOf(r1); r.err != nil || r.v.Kind != TimedOut || r.v.Target != 10 {
		t.Fatalf("after the answer and the timeout: %+v, want timed out waiting for 10", r)
	}

	// Unanswered, then answered below the cache: released.
	d.Applied(20)
	r2 := patient()
	call("for the second patient read")
	answer(fetchAnswer{err: unanswered})
	call("after it went unanswered")
	answer(fetchAnswer{rev: 15})
	if r := verdictOf(r2); r.err != nil || r.v.Kind != Released || r.v.Target != 15 || r.v.RV != 20 {
		t.Fatalf("answered below the cache: %+v, want released at 20 for 15", r)
	}

	// Refused: failed, as upstream's watch fails on an etcd error.
	r3 := patient()
	call("for the third patient read")
	answer(fetchAnswer{err: refused})
	if r := verdictOf(r3); r.err != nil || r.v.Kind != Failed || !errors.Is(r.v.Err, refused) {
		t.Fatalf("refused fetch: %+v, want failed with the refusal", r)
	}
}
