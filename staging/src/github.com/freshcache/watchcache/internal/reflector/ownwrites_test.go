package reflector_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/example"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/metrics"
)

// ownWriter is a reflector whose RevisionPending only counts: no progress
// request is sent unless the test sends one, so a held revision reaches
// the sink only by a later event, by the test's progress request, or as
// an own write. Its clock is fake: the own-write grace ends when the test
// steps it.
type ownWriter struct {
	*env
	r       *reflector.Reflector
	clock   *clocktesting.FakeClock
	pending atomic.Int64
	asked   chan uint64
	done    *completions
}

// completions counts RevisionCompleted by what proved the revision whole.
type completions struct {
	metrics.Discard
	mu sync.Mutex
	by map[string]int
}

func (c *completions) RevisionCompleted(by string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.by[by]++
}

func (c *completions) count(by string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[by]
}

func startOwnWriter(ctx context.Context, t *testing.T) *ownWriter {
	t.Helper()
	o := &ownWriter{env: start(t), clock: clocktesting.NewFakeClock(time.Now()), asked: make(chan uint64, 64),
		done: &completions{by: map[string]int{}}}
	for i := 0; i < 3; i++ {
		o.create(ctx, t, "pod-"+strconv.Itoa(i))
	}
	o.r = o.runWith(t, reflector.Config{Clock: o.clock, Metrics: o.done, RevisionPending: func(rv uint64) {
		o.pending.Add(1)
		o.asked <- rv
	}})
	nextWatch(t, o.env)
	o.converge(ctx, t)
	return o
}

// ownCreate creates pod name through the store as the cache does, telling
// the reflector; between the write's answer and WriteEnded it runs
// beforeEnd with the write's revision.
func (o *ownWriter) ownCreate(ctx context.Context, t *testing.T, name string, beforeEnd func(rv uint64)) uint64 {
	t.Helper()
	o.r.WriteSending()
	out := &example.Pod{}
	err := o.store.Create(ctx, "/pods/ns/"+name, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}, out, 0)
	if err != nil {
		o.r.WriteEnded(0)
		t.Fatal(err)
	}
	rv, err := strconv.ParseUint(out.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if beforeEnd != nil {
		beforeEnd(rv)
	}
	o.r.WriteEnded(rv)
	return rv
}

// reaches waits until the sink is at rv or beyond.
func (o *ownWriter) reaches(t *testing.T, rv uint64) {
	t.Helper()
	o.waitSink(t, "the sink to reach "+strconv.FormatUint(rv, 10), func() bool { return o.sink.RV() >= rv })
}

// askedFor waits for RevisionPending(rv) and checks that the sink has not
// got rv: it is held until something proves it whole.
func (o *ownWriter) askedFor(t *testing.T, rv uint64) {
	t.Helper()
	select {
	case got := <-o.asked:
		if got != rv {
			t.Fatalf("RevisionPending(%d), want %d", got, rv)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("RevisionPending(%d) was never called", rv)
	}
	if at := o.sink.RV(); at >= rv {
		t.Fatalf("the sink is at %d: revision %d went over before anything proved it whole", at, rv)
	}
}

// graceWaiting waits until the watch holds a revision and waits out the
// own-write grace on the fake clock.
func (o *ownWriter) graceWaiting(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !o.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the reflector never waited for a write in flight")
		}
		time.Sleep(time.Millisecond)
	}
}

// heldUntilProgress checks that revision rv is held and asked for, then
// that the test's progress request completes it.
func (o *ownWriter) heldUntilProgress(ctx context.Context, t *testing.T, rv uint64) {
	t.Helper()
	o.askedFor(t, rv)
	if err := o.r.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	o.reaches(t, rv)
}

// TestOwnWriteIsWholeOnArrival: a revision that the cache's own write
// committed goes to the sink without a progress request, whichever of the
// write's answer and its watch event comes first; a revision of anybody
// else's waits for one, as does a transaction of two keys even if a write
// claims its revision.
func TestOwnWriteIsWholeOnArrival(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, o *ownWriter)
		// pending is how many times RevisionPending must have been called.
		pending int64
		// events is the size of the last apply: the case's write.
		events int
		// by is what proves the case's write whole (metrics.CompletedBy*).
		by string
	}{
		{
			name: "answer and event in any order",
			run: func(t *testing.T, o *ownWriter) {
				o.reaches(t, o.ownCreate(ctx, t, "own", nil))
			},
			by: metrics.CompletedByOwnWrite,
		},
		{
			name: "event first, answer within the grace",
			run: func(t *testing.T, o *ownWriter) {
				o.reaches(t, o.ownCreate(ctx, t, "own", func(uint64) { o.graceWaiting(t) }))
			},
			by: metrics.CompletedByOwnWrite,
		},
		{
			name: "event first, answer after the grace",
			run: func(t *testing.T, o *ownWriter) {
				rv := o.ownCreate(ctx, t, "own", func(rv uint64) {
					o.graceWaiting(t)
					o.clock.Step(reflector.OwnWriteGrace)
					o.askedFor(t, rv)
				})
				// The late answer still completes the revision: no
				// progress request was sent.
				o.reaches(t, rv)
			},
			pending: 1,
			by:      metrics.CompletedByOwnWrite,
		},
		{
			name: "a write of somebody else's",
			run: func(t *testing.T, o *ownWriter) {
				rv := o.foreignPut(ctx, t, "foreign")
				o.heldUntilProgress(ctx, t, rv)
			},
			pending: 1,
			by:      metrics.CompletedByProgress,
		},
		{
			name: "an own write that failed leaves nothing in flight",
			run: func(t *testing.T, o *ownWriter) {
				o.r.WriteSending()
				err := o.store.Create(ctx, "/pods/ns/pod-0", &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-0", Namespace: "ns"}}, &example.Pod{}, 0)
				if err == nil {
					t.Fatal("creating an existing pod succeeded")
				}
				o.r.WriteEnded(0)
				// With a write still counted in flight, the fake clock's
				// grace would hold this revision and never ask.
				rv := o.foreignPut(ctx, t, "foreign")
				o.heldUntilProgress(ctx, t, rv)
			},
			pending: 1,
			by:      metrics.CompletedByProgress,
		},
		{
			// A write of the store's is one key, so this cannot happen;
			// a revision of two held events stays held all the same.
			name: "two keys held, then a write claims their revision",
			run: func(t *testing.T, o *ownWriter) {
				o.r.WriteSending()
				rv := o.foreignPut(ctx, t, "a", "b")
				o.askedFor(t, rv) // with a write in flight: only once both are held
				o.r.WriteEnded(rv)
				if err := o.r.RequestProgress(ctx); err != nil {
					t.Fatal(err)
				}
				o.reaches(t, rv)
			},
			pending: 1,
			events:  2,
			by:      metrics.CompletedByProgress,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := startOwnWriter(ctx, t)
			tc.run(t, o)
			o.converge(ctx, t)
			o.checkMonotonic(t)
			if got := o.pending.Load(); got != tc.pending {
				t.Fatalf("RevisionPending called %d times, want %d", got, tc.pending)
			}
			// The case's one write, and nothing before it, was held.
			for _, by := range []string{metrics.CompletedByOwnWrite, metrics.CompletedByProgress, metrics.CompletedByEvent} {
				want := 0
				if by == tc.by {
					want = 1
				}
				if got := o.done.count(by); got != want {
					t.Fatalf("revisions completed by %s: %d, want %d", by, got, want)
				}
			}
			want := tc.events
			if want == 0 {
				want = 1
			}
			if _, _, _, batches := o.counts(); len(batches) == 0 || batches[len(batches)-1] != want {
				t.Fatalf("applies %v, want the last one of %d events", batches, want)
			}
		})
	}
}

// foreignPut puts the pods in one transaction with the etcd client, as a
// client other than the cache could, and returns its revision.
func (o *ownWriter) foreignPut(ctx context.Context, t *testing.T, names ...string) uint64 {
	t.Helper()
	return o.putTxn(ctx, t, names...)
}
