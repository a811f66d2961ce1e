package watchcache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"k8s.io/apiserver/pkg/apis/example"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/oracle"
)

// heldFetcher is an oracle fetch (oracle.NewFromFunc) that can be held in
// flight: while hold is set, a fetch gets etcd's answer and then waits for
// the test to release it, so that the test can act while a fetch that
// etcd has already answered is still in flight: the window the "issued
// after the read arrived" rule is about.
type heldFetcher struct {
	client *clientv3.Client
	hold   atomic.Bool
	held   chan heldFetch

	mu   sync.Mutex
	revs []int64 // every answer, in order
}

type heldFetch struct {
	rev     int64
	release chan struct{}
}

func (h *heldFetcher) get(ctx context.Context) (int64, error) {
	// Linearizable, count only, as oracle.New's fetch.
	resp, err := h.client.Get(ctx, oracle.DefaultKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	h.mu.Lock()
	h.revs = append(h.revs, rev)
	h.mu.Unlock()
	if !h.hold.Load() {
		return rev, nil
	}
	f := heldFetch{rev: rev, release: make(chan struct{})}
	select {
	case h.held <- f:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case <-f.release:
		return rev, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (h *heldFetcher) answers() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.revs...)
}

// TestReadDuringFetchWaitsForNextFetch provokes the coalescing hazard at
// the cache level (docs/design.md, "The protocol", step 1: "a read that
// arrives while a fetch is in flight waits for the next fetch"):
//
//  1. read 1 (consistent LIST) issues a revision fetch; etcd answers R1,
//     and the fetch is held in flight;
//  2. the cache's watch is paused and pod b is written: acknowledged at
//     RV b > R1, invisible to the cache;
//  3. read 2 (consistent LIST) arrives while the fetch is still in flight;
//  4. the fetch is released.
//
// Read 1 is served at R1 without b, which is correct for it (it arrived
// before b was written) and shows that the fetch in flight misses b.
// Read 2 must not use that answer: it waits for a second fetch (R2 >= b),
// stays waiting while the cache cannot see b, and once the watch resumes
// it lists b.
func TestReadDuringFetchWaitsForNextFetch(t *testing.T) {
	base := cachetest.Start(t)
	h := &heldFetcher{client: base.Client, held: make(chan heldFetch, 1)}
	o, err := oracle.NewFromFunc(h.get, oracle.Options{FetchTimeout: longWait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	e := cachetest.StartOn(t, base.Server.V3Client, cachetest.WithOracle(o),
		cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), ConsistentReadTimeout: longWait}))
	ctx := context.Background()
	a := create(t, e.Etcd, "ns", "a", "")
	// With the cache at etcd's revision, read 1 needs no progress
	// notification, which the paused watch would hold back.
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })

	type result struct {
		list *example.PodList
		err  error
	}
	list := func(done chan<- result) {
		l := &example.PodList{}
		err := e.Cache.GetList(ctx, "/pods/", listOpts(""), l)
		done <- result{l, err}
	}

	// 1. Read 1 and its fetch, held after etcd answered.
	h.hold.Store(true)
	done1 := make(chan result, 1)
	go list(done1)
	var f heldFetch
	select {
	case f = <-h.held:
	case <-time.After(longWait):
		t.Fatal("read 1 issued no revision fetch")
	}
	firstFetch := e.Cache.FreshnessStatus().Fetch

	// 2. A write acknowledged after the fetch was answered by etcd.
	e.Gate.Pause()
	b := create(t, e.Etcd, "ns", "b", "")
	bRV := rvOf(t, b.ResourceVersion)
	if bRV <= uint64(f.rev) {
		t.Fatalf("write b at %d, not after the held fetch's R1=%d", bRV, f.rev)
	}

	// 3. Read 2 arrives while the fetch is in flight.
	done2 := make(chan result, 1)
	go list(done2)
	waitFor(t, "read 2 to wait for the next fetch", func() bool {
		s := e.Cache.FreshnessStatus()
		return s.FetchInFlight && s.Covered == 1 && s.Pending == 1
	})

	// 4. Release the fetch; later fetches pass.
	h.hold.Store(false)
	close(f.release)

	r1 := <-done1
	if r1.err != nil {
		t.Fatalf("read 1: %v", r1.err)
	}
	if got := rvOf(t, r1.list.ResourceVersion); got < uint64(f.rev) {
		t.Fatalf("read 1 listed at %d, below its fetch's R1=%d", got, f.rev)
	}
	if names(r1.list)["b"] {
		t.Fatal("read 1 listed b through a paused watch")
	}
	// Read 2 gets a fetch of its own and then waits for the cache to reach
	// it; it must not have been answered from R1 (which would list no b).
	waitFor(t, "read 2's own fetch and its wait for the cache", func() bool {
		select {
		case r2 := <-done2:
			t.Fatalf("read 2 answered while the cache cannot see b (list %v, err %v): it used the fetch that was in flight when it arrived", names(r2.list), r2.err)
		default:
		}
		s := e.Cache.FreshnessStatus()
		return !s.FetchInFlight && s.Fetch == firstFetch+1 && s.Waiting == 1
	})

	e.Gate.Resume()
	r2 := <-done2
	if r2.err != nil {
		t.Fatalf("read 2: %v", r2.err)
	}
	got2 := rvOf(t, r2.list.ResourceVersion)
	if !names(r2.list)["b"] || got2 < bRV {
		t.Fatalf("read 2 listed %v at %d, want b (written at %d)", names(r2.list), got2, bRV)
	}
	revs := h.answers()
	if len(revs) < 2 || uint64(revs[len(revs)-1]) < bRV {
		t.Fatalf("fetch answers %v, want a second fetch at or after b's RV %d", revs, bRV)
	}
	t.Logf("INFLIGHT EVIDENCE: fetch 1 answered R1=%d and was held; b written at %d; read 2 arrived during fetch 1, waited for fetch 2 (R2=%d), listed at %d with b; read 1 listed at %d without b",
		f.rev, bRV, revs[len(revs)-1], got2, rvOf(t, r1.list.ResourceVersion))
}

// blockingSource is a revision source whose fetches stay in flight until
// the cache cancels them, as when etcd does not answer.
type blockingSource struct{ entered chan struct{} }

// RecentRevision answers nothing: no fetch is ever answered.
func (s blockingSource) RecentRevision(time.Duration) (int64, bool) { return 0, false }

func (s blockingSource) RevisionFor(ctx context.Context, _ int) (int64, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestStopWithFetchInFlightAndReadPending stops a cache while a revision
// fetch is in flight and a second read waits for the next fetch: Stop
// returns and both reads end with an error, none served. It is the
// end-to-end side of TestStoppedDriverDoesNotSpin, which pins down the
// interleaving (the pending read still registered when the fetch ends)
// that hung Stop in a robustness run; here the reader usually leaves
// first.
func TestStopWithFetchInFlightAndReadPending(t *testing.T) {
	src := blockingSource{entered: make(chan struct{}, 1)}
	e := cachetest.Start(t, cachetest.WithSource(src),
		cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), ConsistentReadTimeout: longWait}))
	ctx := context.Background()
	done := make(chan error, 2)
	read := func() { done <- e.Cache.GetList(ctx, "/pods/", listOpts(""), &example.PodList{}) }

	go read()
	select {
	case <-src.entered:
	case <-time.After(longWait):
		t.Fatal("read 1 issued no revision fetch")
	}
	go read()
	waitFor(t, "read 2 to wait for the next fetch", func() bool {
		s := e.Cache.FreshnessStatus()
		return s.FetchInFlight && s.Covered == 1 && s.Pending == 1
	})

	stopped := make(chan struct{})
	go func() {
		e.Cache.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(longWait):
		t.Fatal("Stop did not return: the driver is stuck with a fetch in flight and a read pending")
	}
	for i := range 2 {
		if err := <-done; err == nil {
			t.Errorf("read %d was served by a cache that stopped before it was fresh", i+1)
		}
	}
}
