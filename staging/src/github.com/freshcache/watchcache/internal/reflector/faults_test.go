package reflector_test

// Errors that come back at the same place each time the watch is opened
// again: they must end in a relist (and the sink going unready), never in
// a cache that stays ready while it cannot move.

import (
	"context"
	"strconv"
	"testing"
	"time"

	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

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
// into an object (a corrupt value, a transformer that fails) fails the
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
