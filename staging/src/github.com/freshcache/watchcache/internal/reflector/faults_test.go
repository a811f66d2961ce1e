package reflector_test

// Errors that come back at the same place each time the watch is opened
// again: they must end in a relist (and the sink going unready), never in
// a cache that stays ready while it cannot move.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"k8s.io/apimachinery/pkg/watch"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/metrics"
)

// TestUntrustedReplayedRevisionIsNotProgress: with untrusted progress a
// watch that broke inside a transaction resumes from the revision before
// it, so etcd delivers again the events the sink applied already. Those
// are skipped, and they are not progress: a watch that fails right after
// them, every time, runs into the retry budget and relists.
func TestUntrustedReplayedRevisionIsNotProgress(t *testing.T) {
	ctx := context.Background()
	e := start(t)
	for i := 0; i < 5; i++ {
		e.create(ctx, t, "pod-"+strconv.Itoa(i))
	}
	e.runWith(t, reflector.Config{UntrustedProgress: true, TransientRetry: time.Millisecond})
	first := nextWatch(t, e)
	e.converge(ctx, t)
	// The sink gets the first delete of the transaction. Every later watch
	// replays it, then fails on the next event of the same revision.
	e.control.failEveryWatch(1, internalError())
	first.endAfter(1)
	e.deleteTxn(ctx, t, "pod-1", "pod-2", "pod-3")
	e.waitSink(t, "a relist once the retry budget is spent", func() bool {
		replaces, _, _, _ := e.counts()
		return replaces >= 2
	})
	_, unready, reasons, _ := e.counts()
	if unready < 1 || reasons[1] != metrics.RelistRetryBudget {
		t.Fatalf("unready %d, relist reasons %v; want the sink unready and a relist for the retry budget", unready, reasons)
	}
	e.converge(ctx, t)
	e.checkMonotonic(t)
}

// TestUndecodableEventRelistsAtOnce: an event whose value cannot be turned
// into an object (a corrupt value, a transformer that cannot read it) fails the
// same way on every watch from the same revision. It is not a transient
// etcd error: the sink goes unready and the reflector relists at once,
// not after the retry budget (an hour here). Once the value is gone the
// relist succeeds and the sink follows etcd again.
func TestUndecodableEventRelistsAtOnce(t *testing.T) {
	ctx := context.Background()
	e := start(t)
	for i := 0; i < 3; i++ {
		e.create(ctx, t, "pod-"+strconv.Itoa(i))
	}
	e.runWith(t, reflector.Config{TransientRetry: time.Hour})
	nextWatch(t, e)
	e.converge(ctx, t)
	key := etcd3testing.PathPrefix() + "/pods/ns/corrupt"
	if _, err := e.client.Put(ctx, key, "\x00 not an object"); err != nil {
		t.Fatal(err)
	}
	e.waitSink(t, "the sink to go unready", func() bool {
		_, unready, _, _ := e.counts()
		return unready >= 1
	})
	if _, err := e.client.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	e.converge(ctx, t)
	e.checkMonotonic(t)
	replaces, _, reasons, _ := e.counts()
	if replaces < 2 || reasons[1] != metrics.RelistError {
		t.Fatalf("%d lists, reasons %v; want a relist for the error", replaces, reasons)
	}
}

// caughtUpRecorder keeps the catch-up times the reflector reports.
type caughtUpRecorder struct {
	metrics.Discard
	mu sync.Mutex
	d  []time.Duration
}

func (r *caughtUpRecorder) CaughtUp(d time.Duration) {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
}

func (r *caughtUpRecorder) got() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.d...)
}

// TestLeaderlessRetriesBackOff: while etcd has no leader every watch
// fails at once. The reflector watches again within its LeaderBackoff's
// step, which never exceeds reflector.LeaderRetryCap, on the reflector's
// clock. Once the watch delivers again the time since the first error is
// reported as the catch-up time, and the backoff is reset.
func TestLeaderlessRetriesBackOff(t *testing.T) {
	ctx := context.Background()
	e := start(t)
	e.create(ctx, t, "pod-0")
	clk := testingclock.NewFakeClock(time.Now())
	rec := &caughtUpRecorder{}
	e.runWith(t, reflector.Config{Clock: clk, Metrics: rec, TransientRetry: time.Hour})
	first := nextWatch(t, e)
	e.converge(ctx, t)
	e.control.failEveryWatch(0, internalError())
	first.send(t, internalError())
	step := reflector.LeaderRetryCap
	const tries = 10
	for i := 0; i < tries; i++ {
		opened := e.control.opened.Load()
		waitTimer(t, clk)
		clk.Step(step)
		waitUntil(t, fmt.Sprintf("leaderless error %d to be followed by a watch within %v", i+1, step), func() bool {
			return e.control.opened.Load() > opened
		})
	}
	// etcd has a leader again.
	e.control.failEveryWatch(-1, watch.Event{})
	waitTimer(t, clk)
	clk.Step(step)
	e.create(ctx, t, "after")
	e.converge(ctx, t)
	got := rec.got()
	if len(got) != 1 || got[0] < tries*step {
		t.Fatalf("catch-up times %v; want one of at least %v", got, tries*step)
	}
	e.checkNoRelist(t, "a leader loss")
}

// waitTimer waits until the reflector waits on clk.
func waitTimer(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	waitUntil(t, "the reflector to wait for its retry", clk.HasWaiters)
}

// waitUntil polls cond until it holds, for at most 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// kmsTransformer is the identity transformer behind a KMS plugin that the
// test can make unreachable: while it is down, every read of a stored
// value fails as the KMS v2 envelope fails when its plugin's gRPC call
// does (codes.Unavailable).
type kmsTransformer struct {
	value.Transformer
	down     atomic.Bool
	failures atomic.Int64
}

func (k *kmsTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	if k.down.Load() {
		k.failures.Add(1)
		return nil, false, fmt.Errorf("failed to decrypt DEK, error: %w", status.Error(codes.Unavailable, "connection error: kms plugin unreachable"))
	}
	return k.Transformer.TransformFromStorage(ctx, data, dataCtx)
}

// TestUnreachableKMSRewatches: while the KMS plugin is unreachable, a new
// value cannot be decrypted. That is transient, as upstream's cacher
// treats it (it retries its watch for 30 s): the reflector retries the
// watch on the same history, without a relist and without going unready
// (a relist could not decrypt either, and would answer every read with
// 429 until it could). Once the plugin is back, the same watch history
// delivers the value.
func TestUnreachableKMSRewatches(t *testing.T) {
	ctx := context.Background()
	kms := &kmsTransformer{Transformer: identity.NewEncryptCheckTransformer()}
	e := startWith(t, kms)
	e.create(ctx, t, "pod-0")
	var rec retryRecorder
	e.runWith(t, reflector.Config{TransientRetry: time.Hour, Metrics: &rec})
	e.converge(ctx, t)
	kms.down.Store(true)
	e.create(ctx, t, "while-kms-down")
	waitUntil(t, "a retried watch", func() bool { return rec.retries.Load() >= 2 })
	kms.down.Store(false)
	e.converge(ctx, t)
	e.checkNoRelist(t, "the KMS plugin came back")
	if kms.failures.Load() == 0 {
		t.Fatal("the transformer never failed: the test did not exercise the outage")
	}
}

// retryRecorder counts re-watches after transient errors.
type retryRecorder struct {
	metrics.Discard
	retries atomic.Int64
}

func (r *retryRecorder) WatchRetried() { r.retries.Add(1) }
