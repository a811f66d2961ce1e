package watchcache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// Bounded rv=0 reads (Options.ZeroReadStaleness): an rv=0 read under
// FreshResourceVersionZero is served at a revision a recent request was
// answered with, when the source has one, and fetches only when it has
// none. rv="" never takes a recent revision.

// recentSource fetches from etcd through get (set once the store exists)
// and answers RecentRevision as the test says, recording each bound asked.
type recentSource struct {
	mu      sync.Mutex
	get     func(context.Context) (int64, error)
	fetches int
	recent  int64
	ok      bool
	asked   []time.Duration
}

func (s *recentSource) RevisionFor(ctx context.Context, _ int) (int64, error) {
	s.mu.Lock()
	s.fetches++
	get := s.get
	s.mu.Unlock()
	return get(ctx)
}

func (s *recentSource) RecentRevision(maxAge time.Duration) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, maxAge)
	return s.recent, s.ok
}

func (s *recentSource) set(rev int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent, s.ok = rev, ok
}

// counts returns the fetches and RecentRevision calls so far.
func (s *recentSource) counts() (fetches, asked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches, len(s.asked)
}

func startRecent(t *testing.T, opts watchcache.Options, rec metrics.Recorder) (*cachetest.Env, *recentSource) {
	t.Helper()
	src := &recentSource{}
	if rec == nil {
		rec = metrics.Discard{}
	}
	e := cachetest.Start(t, cachetest.WithSource(src), cachetest.WithRecorder(rec), cachetest.WithOptions(opts))
	src.mu.Lock()
	src.get = func(ctx context.Context) (int64, error) {
		rv, err := e.Etcd.GetCurrentResourceVersion(ctx)
		return int64(rv), err
	}
	src.mu.Unlock()
	return e, src
}

func TestBoundedZeroReadsUseARecentRevision(t *testing.T) {
	ctx := context.Background()
	e, src := startRecent(t, watchcache.Options{ConsistentReadsFromCache: on(), FreshResourceVersionZero: on()}, nil)
	a := create(t, e.Etcd, "ns", "a", "")
	src.set(int64(rvOf(t, a.ResourceVersion)), true)

	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), list); err != nil || !names(list)["a"] {
		t.Fatalf("rv=0 LIST with a recent revision: %v %v, want a", err, names(list))
	}
	get := &example.Pod{}
	if err := e.Cache.Get(ctx, "/pods/ns/a", storage.GetOptions{ResourceVersion: "0"}, get); err != nil || get.Name != "a" {
		t.Fatalf("rv=0 GET with a recent revision: %v %q", err, get.Name)
	}
	if fetches, asked := src.counts(); fetches != 0 || asked != 2 {
		t.Fatalf("%d fetches and %d recent-revision calls for two bounded reads, want 0 and 2", fetches, asked)
	}
	src.mu.Lock()
	bound := src.asked[0]
	src.mu.Unlock()
	if bound != watchcache.DefaultZeroReadStaleness {
		t.Fatalf("RecentRevision asked with %v, want the default %v", bound, watchcache.DefaultZeroReadStaleness)
	}

	// No recent revision: the read fetches one, as rv="" does.
	src.set(0, false)
	if err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), &example.PodList{}); err != nil {
		t.Fatal(err)
	}
	if fetches, _ := src.counts(); fetches != 1 {
		t.Fatalf("%d fetches for an rv=0 LIST without a recent revision, want 1", fetches)
	}
	// rv="" never takes a recent revision.
	src.set(int64(rvOf(t, a.ResourceVersion)), true)
	_, before := src.counts()
	if err := e.Cache.GetList(ctx, "/pods/", listOpts(""), &example.PodList{}); err != nil {
		t.Fatal(err)
	}
	if fetches, asked := src.counts(); fetches != 2 || asked != before {
		t.Fatalf("rv=\"\" LIST: %d fetches (want 2) and %d recent-revision calls (want %d)", fetches, asked, before)
	}
}

// With a negative ZeroReadStaleness rv=0 is as strict as rv="": every read
// fetches, and no recent revision is asked for.
func TestStrictZeroReadsNeverUseARecentRevision(t *testing.T) {
	e, src := startRecent(t, watchcache.Options{FreshResourceVersionZero: on(), ZeroReadStaleness: -1}, nil)
	src.set(1, true)
	for range 2 {
		if err := e.Cache.GetList(context.Background(), "/pods/", listOpts("0"), &example.PodList{}); err != nil {
			t.Fatal(err)
		}
	}
	if fetches, asked := src.counts(); fetches != 2 || asked != 0 {
		t.Fatalf("strict rv=0: %d fetches and %d recent-revision calls, want 2 and 0", fetches, asked)
	}
}

// A recent revision the cache has not reached: the read waits for it and is
// released when the cache gets there, and it is never served stale. When
// the wait times out it ends as a consistent rv=0 read does: LIST 429, GET
// from etcd, WATCH too large resource version.
func TestBoundedZeroReadsWaitForTheRecentRevision(t *testing.T) {
	ctx := context.Background()
	t.Run("released", func(t *testing.T) {
		e, src := startRecent(t, watchcache.Options{FreshResourceVersionZero: on(), ConsistentReadTimeout: longWait}, nil)
		e.Gate.Pause()
		b := create(t, e.Etcd, "ns", "b", "")
		src.set(int64(rvOf(t, b.ResourceVersion)), true)
		type result struct {
			list *example.PodList
			err  error
		}
		done := make(chan result, 1)
		go func() {
			list := &example.PodList{}
			err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), list)
			done <- result{list, err}
		}()
		waitFor(t, "the rv=0 LIST to wait", waiting(e.Cache, 1))
		e.Gate.Resume()
		r := <-done
		if r.err != nil || !names(r.list)["b"] {
			t.Fatalf("rv=0 LIST released: %v %v, want b", r.err, names(r.list))
		}
		if fetches, _ := src.counts(); fetches != 0 {
			t.Fatalf("%d fetches, want 0", fetches)
		}
	})
	t.Run("timed out", func(t *testing.T) {
		rec := newRecorder()
		e, src := startRecent(t, watchcache.Options{FreshResourceVersionZero: on(), ConsistentReadTimeout: 50 * time.Millisecond}, rec)
		e.Gate.Pause()
		b := create(t, e.Etcd, "ns", "b", "")
		src.set(int64(rvOf(t, b.ResourceVersion)), true)
		err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), &example.PodList{})
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("rv=0 LIST behind its recent revision: %v, want 429", err)
		}
		get := &example.Pod{}
		if err := e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{ResourceVersion: "0"}, get); err != nil || get.Name != "b" {
			t.Errorf("rv=0 GET behind its recent revision: %v %q, want b from etcd", err, get.Name)
		}
		w, err := e.Cache.Watch(ctx, "/pods/", listOpts("0"))
		if err != nil {
			t.Fatalf("rv=0 WATCH: %v, want an error event", err)
		}
		if werr := watchError(t, w); !storage.IsTooLargeResourceVersion(werr) {
			t.Errorf("rv=0 WATCH behind its recent revision: %v, want TooLargeResourceVersion", werr)
		}
		if fetches, _ := src.counts(); fetches != 0 {
			t.Errorf("%d fetches, want 0", fetches)
		}
		if n := rec.count("list/zero/" + metrics.OutcomeRejected); n != 1 {
			t.Errorf("reads_total{list,zero,rejected} = %d, want 1", n)
		}
		if n := rec.count("get/zero/" + metrics.OutcomeFallback); n != 1 {
			t.Errorf("reads_total{get,zero,fallback} = %d, want 1", n)
		}
	})
}

// An rv=0 LIST whose revision is known and whose cache is catching up
// when ConsistentReadTimeout passes (the cache moved, but not far enough)
// waits another timeout instead of getting 429, for as long as the cache
// keeps moving; a timeout in which it did not move still gets 429. Both
// rv=0 LISTs: bounded (a recent revision) and fetched (no recent
// revision). The cache runs on a fake clock, so each timeout passes only
// when the test steps it, after it let exactly one event through. (The
// cache applies an event once the next one proves its revision whole, so
// the first event is let through ahead.)
func TestZeroListWaitsWhileTheCacheCatchesUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bounded bool
	}{{"bounded", true}, {"fetched", false}} {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = time.Second
			clk := testingclock.NewFakeClock(time.Now())
			rec := newRecorder()
			e, src := startRecent(t, watchcache.Options{FreshResourceVersionZero: on(), ConsistentReadTimeout: timeout, Clock: clk}, rec)
			e.Gate.Pause()
			var last *example.Pod
			const pods = 5
			for i := range pods {
				last = create(t, e.Etcd, "ns", fmt.Sprintf("p%d", i), "")
			}
			src.set(int64(rvOf(t, last.ResourceVersion)), tc.bounded)
			extended := "extended/list/" + metrics.RequestedZero

			list := &example.PodList{}
			done := make(chan error, 1)
			go func() { done <- e.Cache.GetList(context.Background(), "/pods/", listOpts("0"), list) }()
			waitFor(t, "the rv=0 LIST to wait", waiting(e.Cache, 1))
			e.Gate.Let(1)
			// Two timeouts, each after one event: the cache moved in both.
			for i := 1; i <= 2; i++ {
				before := e.Cache.RV()
				e.Gate.Let(1)
				waitFor(t, "the cache to apply one event", func() bool { return e.Cache.RV() > before })
				clk.Step(timeout)
				waitFor(t, "the wait to be extended", func() bool { return rec.count(extended) == i })
				waitFor(t, "the extended wait to be registered", waiting(e.Cache, 1))
				select {
				case err := <-done:
					t.Fatalf("rv=0 LIST ended after timeout %d while the cache caught up: %v", i, err)
				default:
				}
			}
			// A timeout in which the cache did not move: 429, as before.
			clk.Step(timeout)
			err := <-done
			if !apierrors.IsTooManyRequests(err) {
				t.Fatalf("rv=0 LIST after a timeout without progress: %v, want 429", err)
			}
			// The message tells the wait's whole length, not one timeout.
			if want := fmt.Sprintf("moved toward the read's revision for %v, then not at all for %v", 2*timeout, timeout); !strings.Contains(err.Error(), want) {
				t.Errorf("429 says %q, want it to contain %q", err, want)
			}
			if n := rec.count("list/zero/" + metrics.OutcomeRejected); n != 1 {
				t.Errorf("reads_total{list,zero,rejected} = %d, want 1", n)
			}

			// Caught up in the end: the next read is served whole.
			go func() { done <- e.Cache.GetList(context.Background(), "/pods/", listOpts("0"), list) }()
			waitFor(t, "the second rv=0 LIST to wait", waiting(e.Cache, 1))
			before := e.Cache.RV()
			e.Gate.Let(1)
			waitFor(t, "the cache to apply one event", func() bool { return e.Cache.RV() > before })
			clk.Step(timeout)
			waitFor(t, "the wait to be extended", func() bool { return rec.count(extended) == 3 })
			e.Gate.Resume()
			if err := <-done; err != nil || len(list.Items) != pods {
				t.Fatalf("rv=0 LIST once caught up: %v, %d pods, want %d", err, len(list.Items), pods)
			}
			if got := rvOf(t, list.ResourceVersion); got < rvOf(t, last.ResourceVersion) {
				t.Fatalf("served at %d, below its revision %s", got, last.ResourceVersion)
			}
		})
	}
}

// A bounded rv=0 read waits for the newest write through this cache that
// was acknowledged before it arrived, however old the recent revision is:
// a client reads its own writes at rv=0.
func TestBoundedZeroReadsSeeOwnWrites(t *testing.T) {
	ctx := context.Background()
	e, src := startRecent(t, watchcache.Options{FreshResourceVersionZero: on(), ConsistentReadTimeout: longWait}, nil)
	a := create(t, e.Cache, "ns", "a", "")
	src.set(int64(rvOf(t, a.ResourceVersion)), true) // below the write to come
	e.Gate.Pause()
	create(t, e.Cache, "ns", "own", "")
	done := make(chan *example.PodList, 1)
	go func() {
		list := &example.PodList{}
		if err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), list); err != nil {
			t.Errorf("rv=0 LIST: %v", err)
		}
		done <- list
	}()
	waitFor(t, "the rv=0 LIST to wait for the own write", waiting(e.Cache, 1))
	e.Gate.Resume()
	if list := <-done; !names(list)["own"] {
		t.Fatalf("rv=0 LIST after an own write: %v, want own", names(list))
	}
	if fetches, _ := src.counts(); fetches != 0 {
		t.Fatalf("%d fetches, want 0", fetches)
	}
}
