package watchcache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// reflectorPage is the cache's list page size in these tests: the gate
// fails exactly the reflector's lists with it.
const reflectorPage = 777

func retryAfter(t *testing.T, err error) int {
	t.Helper()
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("got %v, want 429", err)
	}
	s, ok := apierrors.SuggestsClientDelay(err)
	if !ok {
		t.Fatalf("429 without Retry-After: %v", err)
	}
	return s
}

// TestReadinessDuringRelist: when the cache must list again (here a
// compaction error on its watch) and the list keeps failing, it goes back
// to pending as upstream's cacher does, instead of serving a state that
// grows older: LISTs get 429 with a Retry-After that grows with the
// downtime (1 s to 30 s), limited unfiltered LISTs and GETs go to etcd,
// watches get 429, and open watchers are closed. Once a list succeeds the
// cache is ready again and current.
func TestReadinessDuringRelist(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(), Clock: clk, ListPageSize: reflectorPage,
	}))
	ctx := context.Background()
	a := create(t, e.Cache, "ns", "a", "")
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })
	open := watchAll(t, e.Cache, rvOf(t, a.ResourceVersion))

	e.Gate.FailLists(reflectorPage, errors.New("etcd unreachable"))
	gone := apierrors.NewResourceExpired("compacted").ErrStatus
	e.Gate.Inject(watch.Event{Type: watch.Error, Object: &gone})
	waitFor(t, "the cache to go pending", func() bool { return !e.Cache.Ready() })
	if err := e.Cache.ReadinessCheck(); err == nil {
		t.Fatal("ReadinessCheck passes on a pending cache")
	}
	select {
	case _, ok := <-open.ResultChan():
		if ok {
			// A pending cache closes its watchers; drain until closed.
			for range open.ResultChan() {
			}
		}
	case <-time.After(longWait):
		t.Fatal("the open watcher was not closed")
	}

	b := create(t, e.Cache, "ns", "b", "") // only etcd knows b
	for _, rv := range []string{"0", ""} {
		err := e.Cache.GetList(ctx, "/pods/", listOpts(rv), &example.PodList{})
		if s := retryAfter(t, err); s != 1 {
			t.Fatalf("LIST rv=%q just after going pending: Retry-After %d, want 1", rv, s)
		}
	}
	limited := listOpts("0")
	limited.Predicate.Limit = 5
	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", limited, list); err != nil || len(list.Items) != 2 {
		t.Fatalf("limited LIST while pending: %d pods, %v; want etcd's a and b", len(list.Items), err)
	}
	got := &example.Pod{}
	if err := e.Cache.Get(ctx, cachetest.PodKey(b), storage.GetOptions{ResourceVersion: "0"}, got); err != nil || got.Name != "b" {
		t.Fatalf("GET rv=0 while pending: %v, want etcd's b", err)
	}
	_, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	retryAfter(t, err)

	// A long failure: the Retry-After grows to its cap.
	clk.Step(61 * time.Second)
	if s := retryAfter(t, e.Cache.GetList(ctx, "/pods/", listOpts("0"), &example.PodList{})); s != 30 {
		t.Fatalf("Retry-After %d after a minute pending, want 30", s)
	}

	e.Gate.FailLists(0, nil)
	waitFor(t, "the cache to relist", func() bool {
		clk.Step(time.Second) // the reflector's backoff runs on the fake clock
		return e.Cache.Ready()
	})
	if n := cachedCount(t, e.Cache); n != 2 {
		t.Fatalf("after the relist the cache holds %d pods, want a and b", n)
	}
}
