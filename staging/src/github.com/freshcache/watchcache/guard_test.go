package watchcache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// TestGuardTrippedNoWaitTrustsProgress: on an etcd the version guard
// rejects (progress notifications may run ahead of events, etcd#15220), no
// wait may rest on a progress notification. NotOlderThan waits end by
// events or time out, as upstream's cacher waits without progress support;
// not-yet-fresh Exact reads and continuations go to etcd; and the cache
// sends no progress request at all.
func TestGuardTrippedNoWaitTrustsProgress(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithConsistentReadsDisabled(metrics.ReasonEtcdVersion),
		cachetest.WithOptions(watchcache.Options{ConsistentReadTimeout: 300 * time.Millisecond}))
	ctx := context.Background()
	a := create(t, e.Cache, "ns", "a", "")
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })
	before := e.Gate.ProgressRequests()

	// A revision no pod event reaches: only a progress notification could
	// take the cache there.
	future := uint64(e.IncreaseRV(ctx, t))
	notOlder := listOpts(fmt.Sprint(future))
	notOlder.ResourceVersionMatch = "NotOlderThan"
	err := e.Cache.GetList(ctx, "/pods/", notOlder, &example.PodList{})
	if !storage.IsTooLargeResourceVersion(err) {
		t.Fatalf("NotOlderThan %d on a cache at %d: %v, want too large resource version", future, e.Cache.RV(), err)
	}
	exact := listOpts(fmt.Sprint(future))
	exact.ResourceVersionMatch = "Exact"
	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", exact, list); err != nil {
		t.Fatalf("Exact at %d: %v, want etcd's answer", future, err)
	}
	if len(list.Items) != 1 || list.ResourceVersion != fmt.Sprint(future) {
		t.Fatalf("Exact at %d: %d pods at %s, want a at %d", future, len(list.Items), list.ResourceVersion, future)
	}
	if n := e.Gate.ProgressRequests() - before; n != 0 {
		t.Fatalf("%d progress requests with the guard tripped, want 0", n)
	}
	// An event still moves the cache, and a wait it ends is served from it.
	b := create(t, e.Cache, "ns", "b", "")
	notOlder.ResourceVersion = b.ResourceVersion
	list = &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", notOlder, list); err != nil || len(list.Items) != 2 {
		t.Fatalf("NotOlderThan %s: %d pods, %v; want a and b", b.ResourceVersion, len(list.Items), err)
	}
	if n := e.Gate.ProgressRequests() - before; n != 0 {
		t.Fatalf("%d progress requests with the guard tripped, want 0", n)
	}
}

// TestGuardTrippedRefusesWatchList: a watch-list (sendInitialEvents) needs
// a revision the cache can prove; with the guard tripped it is refused at
// once with an internal error, as upstream's cacher refuses it when etcd
// cannot serve progress requests, so client-go falls back to LIST at once
// instead of after the read timeout.
func TestGuardTrippedRefusesWatchList(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithConsistentReadsDisabled(metrics.ReasonEtcdVersion),
		cachetest.WithOptions(watchcache.Options{ConsistentReadTimeout: longWait}))
	yes := true
	opts := storage.ListOptions{Recursive: true, SendInitialEvents: &yes, Predicate: storage.Everything}
	opts.Predicate.AllowWatchBookmarks = true
	w, err := e.Cache.Watch(context.Background(), "/pods/", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != 500 {
			t.Fatalf("got %s %v, want an internal-error ERROR event", ev.Type, ev.Object)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch-list was not refused at once")
	}
}
