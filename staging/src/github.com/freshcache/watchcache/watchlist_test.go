package watchcache_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/oracle"
)

// watchListResult is what a Watch call that may block returned.
type watchListResult struct {
	w   watch.Interface
	err error
}

// goWatchList opens a watch-list (sendInitialEvents=true, rv="",
// bookmarks: what client-go's reflector sends) in a goroutine: Watch itself
// blocks while the cache waits for freshness.
func goWatchList(ctx context.Context, c *watchcache.Cache) <-chan watchListResult {
	yes := true
	opts := storage.ListOptions{Recursive: true, SendInitialEvents: &yes, Predicate: storage.Everything}
	opts.Predicate.AllowWatchBookmarks = true
	ch := make(chan watchListResult, 1)
	go func() {
		w, err := c.Watch(ctx, "/pods/", opts)
		ch <- watchListResult{w, err}
	}()
	return ch
}

// TestWatchListWaitsForRevisionUnderItsContext is kubernetes#59848's
// kubelet path in the library. The cache's etcd member is cut off from
// its peers, so the linearizable revision fetch gets no answer: each
// fetch runs into its 1 s limit. A watch-list at rv="" must then be held,
// as upstream's cacher holds it (it reads etcd's revision under the
// watch's context), not fail after ConsistentReadTimeout (300 ms): a
// failed watch-list sends client-go's reflector to a LIST at rv=0, which
// the cache answers as it is, stale. Here:
//
//   - with TimeoutFallback the watch-list stays open without an event
//     through two unanswered fetches, far past the timeout; one whose
//     client gives up ends then, and only then; once the member is back
//     the other gets the initial events, the pod created during the
//     cut included, and the initial-events-end bookmark;
//   - with TimeoutReject the operator asked for bounded waits: 429 with
//     Retry-After after the timeout, which client-go retries rather than
//     falling back to rv=0.
func TestWatchListWaitsForRevisionUnderItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster and isolates a member for a few seconds")
	}
	cl, leader, follower := startClusterWithLeader(t)
	client := cl.KubeClient(t, follower)
	// One fetch per second at most while the member is cut off: the
	// fetch's own limit, which the watch must outwait.
	orc, err := oracle.New(client.Client, oracle.Options{FetchTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(orc.Close)
	const timeout = 300 * time.Millisecond
	fallback := cachetest.StartOn(t, client, cachetest.WithOracle(orc), cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(), FreshResourceVersionZero: off(), ConsistentReadTimeout: timeout,
	}))
	reject := cachetest.StartOn(t, client, cachetest.WithOracle(orc), cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(), FreshResourceVersionZero: off(), ConsistentReadTimeout: timeout,
		TimeoutAction: watchcache.TimeoutReject,
	}))
	writer := cachetest.StartOn(t, cl.KubeClient(t, leader))

	before := create(t, writer.Etcd, "ns", "before", "")
	waitFor(t, "the caches to see the first pod", func() bool {
		return fallback.Cache.RV() >= rvOf(t, before.ResourceVersion) && reject.Cache.RV() >= rvOf(t, before.ResourceVersion)
	})

	cl.Isolate(follower)
	during := create(t, writer.Etcd, "ns", "during", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*longWait)
	defer cancel()
	held := goWatchList(ctx, fallback.Cache)
	leaving, leave := context.WithCancel(ctx)
	defer leave()
	left := goWatchList(leaving, fallback.Cache)

	// Reject: bounded, 429, well before the member is back.
	select {
	case r := <-goWatchList(ctx, reject.Cache):
		if !apierrors.IsTooManyRequests(r.err) {
			t.Fatalf("reject: watch-list on the cut-off member answered %v, %v; want 429", r.w, r.err)
		}
		if s, ok := apierrors.SuggestsClientDelay(r.err); !ok || s <= 0 {
			t.Errorf("reject: no Retry-After in %v", r.err)
		}
	case <-time.After(longWait):
		t.Fatal("reject: the watch-list was not answered within the timeout")
	}

	// Fallback: held through two fetches that each ran into their limit,
	// several times ConsistentReadTimeout.
	failed := orc.Stats().FailedFetches
	waitFor(t, "two revision fetches to go unanswered", func() bool { return orc.Stats().FailedFetches >= failed+2 })
	for name, ch := range map[string]<-chan watchListResult{"held": held, "leaving": left} {
		select {
		case r := <-ch:
			ev := "no watch"
			if r.w != nil {
				e := <-r.w.ResultChan()
				ev = string(e.Type) + " " + describeEvent(e)
			}
			t.Fatalf("%s watch-list ended while the member was cut off (old behaviour: fail after ConsistentReadTimeout): %v, first event %s", name, r.err, ev)
		default:
		}
	}
	if st := fallback.Cache.FreshnessStatus(); st.Pending+st.Covered != 2 {
		t.Fatalf("freshness status %+v: want both watch-lists waiting for a revision", st)
	}

	// A client that gives up ends its own wait, and only its own.
	leave()
	select {
	case r := <-left:
		if r.err != nil {
			t.Fatalf("leaving watch-list: %v, want an ERROR event", r.err)
		}
		if werr := watchError(t, r.w); !apierrors.IsInternalError(werr) {
			t.Fatalf("leaving watch-list: %v, want 500 for the cancelled context", werr)
		}
	case <-time.After(longWait):
		t.Fatal("the watch-list whose client left did not end")
	}
	select {
	case r := <-held:
		t.Fatalf("the other watch-list ended with it: %v", r.err)
	default:
	}

	cl.Heal()
	var w watch.Interface
	select {
	case r := <-held:
		if r.err != nil {
			t.Fatalf("held watch-list after the member came back: %v", r.err)
		}
		w = r.w
	case <-time.After(2 * longWait):
		t.Fatal("the held watch-list was not answered after the member came back")
	}
	defer w.Stop()
	evs := collect(t, w, 3)
	got := map[string]bool{}
	for _, ev := range evs[:2] {
		if ev.Type != watch.Added {
			t.Fatalf("initial events %v: want two ADDED, then the bookmark", evs)
		}
		got[podOf(t, ev).Name] = true
	}
	if !got[before.Name] || !got[during.Name] {
		t.Fatalf("initial events name %v; want %s and %s (the write during the cut)", got, before.Name, during.Name)
	}
	if evs[2].Type != watch.Bookmark {
		t.Fatalf("third event %s, want the initial-events-end bookmark", evs[2].Type)
	}
	m, err := meta.Accessor(evs[2].Object)
	if err != nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("bookmark %v without the initial-events-end annotation (%v)", evs[2].Object, err)
	}
	if rv := rvOf(t, m.GetResourceVersion()); rv < rvOf(t, during.ResourceVersion) {
		t.Fatalf("initial events end at %d, before the write during the cut at %s", rv, during.ResourceVersion)
	}
}

// describeEvent names what a watch event carries, for failure messages.
func describeEvent(ev watch.Event) string {
	if st, ok := ev.Object.(*metav1.Status); ok {
		return st.Message
	}
	if m, err := meta.Accessor(ev.Object); err == nil {
		return m.GetName()
	}
	return ""
}
