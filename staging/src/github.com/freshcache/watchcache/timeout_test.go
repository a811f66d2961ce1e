package watchcache_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// What a consistent read gets when it cannot be made fresh from the cache:
// the wait timed out, or the revision fetch failed. Never the stale cache.

// TestTimeoutActions holds the cache back so that a consistent read cannot
// become fresh: fallback serves it from etcd (with the write), except an
// rv=0 LIST, which upstream never sends to etcd and which gets 429; reject
// answers 429 with Retry-After. Neither serves the stale cache.
func TestTimeoutActions(t *testing.T) {
	for _, action := range []watchcache.TimeoutAction{watchcache.TimeoutFallback, watchcache.TimeoutReject} {
		t.Run(string(action), func(t *testing.T) {
			rec := newRecorder()
			e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(watchcache.Options{
				ConsistentReadsFromCache: on(), FreshResourceVersionZero: on(),
				ConsistentReadTimeout: 50 * time.Millisecond, TimeoutAction: action,
			}))
			ctx := context.Background()
			e.Gate.Pause()
			create(t, e.Etcd, "ns", "b", "")
			etcdWatches := e.Gate.Watches()
			for _, rv := range []string{"", "0"} {
				list := &example.PodList{}
				err := e.Cache.GetList(ctx, "/pods/", listOpts(rv), list)
				get := &example.Pod{}
				gerr := e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{ResourceVersion: rv}, get)
				w, werr := e.Cache.Watch(ctx, "/pods/", listOpts(rv))
				switch action {
				case watchcache.TimeoutFallback:
					switch {
					case rv == "0":
						// Upstream never lists rv=0 from etcd: 429.
						if !apierrors.IsTooManyRequests(err) {
							t.Errorf("rv=0 fallback LIST: %v %v, want 429", err, names(list))
						} else if s, ok := apierrors.SuggestsClientDelay(err); !ok || s <= 0 {
							t.Errorf("rv=0 fallback LIST: no Retry-After in %v", err)
						}
					case err != nil || !names(list)["b"]:
						t.Errorf("rv=%q fallback LIST: %v %v", rv, err, names(list))
					}
					if gerr != nil || get.Name != "b" {
						t.Errorf("rv=%q fallback GET: %v %q", rv, gerr, get.Name)
					}
					// A watch is not delegated: it gets upstream's answer
					// to a watch that cannot be made fresh in time.
					if werr != nil {
						t.Errorf("rv=%q fallback WATCH: %v, want an error event", rv, werr)
						break
					}
					werr = watchError(t, w)
					if !storage.IsTooLargeResourceVersion(werr) {
						t.Errorf("rv=%q fallback WATCH: %v, want TooLargeResourceVersion", rv, werr)
					}
					if s, ok := apierrors.SuggestsClientDelay(werr); !ok || s <= 0 {
						t.Errorf("rv=%q fallback WATCH: no Retry-After in %v", rv, werr)
					}
				case watchcache.TimeoutReject:
					for what, err := range map[string]error{"LIST": err, "GET": gerr, "WATCH": werr} {
						if !apierrors.IsTooManyRequests(err) {
							t.Errorf("rv=%q reject %s: %v, want 429", rv, what, err)
							continue
						}
						if s, ok := apierrors.SuggestsClientDelay(err); !ok || s <= 0 {
							t.Errorf("rv=%q reject %s: no Retry-After in %v", rv, what, err)
						}
					}
				}
			}
			if n := e.Gate.Watches() - etcdWatches; n != 0 {
				t.Errorf("%d watches opened on etcd for clients, want none", n)
			}
			outcome := metrics.OutcomeFallback
			if action == watchcache.TimeoutReject {
				outcome = metrics.OutcomeRejected
			}
			if n := rec.count("watch/consistent/" + metrics.OutcomeRejected); n != 1 {
				t.Errorf("reads_total{watch,consistent,rejected} = %d, want 1", n)
			}
			if n := rec.count("list/consistent/" + outcome); n != 1 {
				t.Errorf("reads_total{list,consistent,%s} = %d", outcome, n)
			}
			if n := rec.count("get/zero/" + outcome); n != 1 {
				t.Errorf("reads_total{get,zero,%s} = %d", outcome, n)
			}
			if n := rec.count("list/zero/" + metrics.OutcomeRejected); n != 1 {
				t.Errorf("reads_total{list,zero,rejected} = %d, want 1", n)
			}
			if n := rec.count("list/zero/" + metrics.OutcomeFallback); n != 0 {
				t.Errorf("reads_total{list,zero,fallback} = %d, want 0", n)
			}
			// Timed out, so never released: the wait is observed, the
			// release is not.
			for _, k := range []string{"list/consistent", "get/zero"} {
				if waits, releases := rec.durations(k); len(waits) != 1 || len(releases) != 0 {
					t.Errorf("%s: %d waits and %d releases observed, want 1 and 0", k, len(waits), len(releases))
				}
			}
		})
	}
}

// failingSource is a revision source whose every fetch fails, as when the
// member the cache talks to has lost the quorum.
type failingSource struct{}

func (failingSource) RevisionFor(context.Context, int) (int64, error) {
	return 0, errors.New("etcdserver: request timed out")
}

func (failingSource) RecentRevision(time.Duration) (int64, bool) { return 0, false }

// TestFailedFetchFollowsTimeoutAction: a read whose revision fetch failed
// is never served from the cache; with fallback etcd answers it (fresh),
// with reject it gets 429 and Retry-After. An rv=0 LIST gets 429 either
// way.
func TestFailedFetchFollowsTimeoutAction(t *testing.T) {
	for _, action := range []watchcache.TimeoutAction{watchcache.TimeoutFallback, watchcache.TimeoutReject} {
		t.Run(string(action), func(t *testing.T) {
			rec := newRecorder()
			e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithSource(failingSource{}), cachetest.WithOptions(watchcache.Options{
				ConsistentReadsFromCache: on(), FreshResourceVersionZero: on(),
				ConsistentReadTimeout: longWait, TimeoutAction: action,
			}))
			ctx := context.Background()
			// The cache never sees this write: only etcd can answer with it.
			e.Gate.Pause()
			create(t, e.Etcd, "ns", "fresh", "")
			etcdWatches := e.Gate.Watches()
			list := &example.PodList{}
			err := e.Cache.GetList(ctx, "/pods/", listOpts(""), list)
			zerr := e.Cache.GetList(ctx, "/pods/", listOpts("0"), &example.PodList{})
			get := &example.Pod{}
			gerr := e.Cache.Get(ctx, "/pods/ns/fresh", storage.GetOptions{ResourceVersion: "0"}, get)
			w, werr := e.Cache.Watch(ctx, "/pods/", listOpts(""))
			// An rv=0 LIST is never sent to etcd: 429 with either action.
			if !apierrors.IsTooManyRequests(zerr) {
				t.Errorf("%s rv=0 LIST after a failed fetch: %v, want 429", action, zerr)
			} else if s, ok := apierrors.SuggestsClientDelay(zerr); !ok || s <= 0 {
				t.Errorf("%s rv=0 LIST: no Retry-After in %v", action, zerr)
			}
			if n := rec.count("list/zero/" + metrics.OutcomeRejected); n != 1 {
				t.Errorf("reads_total{list,zero,rejected} = %d, want 1", n)
			}
			if action == watchcache.TimeoutFallback {
				// A watch is not delegated: it fails with the fetch's
				// error, as upstream's watch does when it cannot read
				// etcd's revision (500).
				if werr != nil {
					t.Fatalf("fallback WATCH after a failed fetch: %v, want an error event", werr)
				}
				werr = watchError(t, w)
				if !apierrors.IsInternalError(werr) || !strings.Contains(werr.Error(), "request timed out") {
					t.Errorf("fallback WATCH after a failed fetch: %v, want 500 with the fetch's error", werr)
				}
			} else if w != nil {
				w.Stop()
			}
			if n := e.Gate.Watches() - etcdWatches; n != 0 {
				t.Errorf("%d watches opened on etcd for clients, want none", n)
			}
			switch action {
			case watchcache.TimeoutFallback:
				if err != nil || !names(list)["fresh"] {
					t.Fatalf("fallback LIST after a failed fetch: %v %v", err, names(list))
				}
				if gerr != nil || get.Name != "fresh" {
					t.Fatalf("fallback GET after a failed fetch: %v %q", gerr, get.Name)
				}
				if n := rec.count("list/consistent/" + metrics.OutcomeFallback); n != 1 {
					t.Errorf("reads_total{list,consistent,fallback} = %d", n)
				}
			case watchcache.TimeoutReject:
				for what, err := range map[string]error{"LIST": err, "GET": gerr, "WATCH": werr} {
					if !apierrors.IsTooManyRequests(err) {
						t.Fatalf("reject %s after a failed fetch: %v, want 429", what, err)
					}
					if s, ok := apierrors.SuggestsClientDelay(err); !ok || s <= 0 {
						t.Errorf("reject %s: no Retry-After in %v", what, err)
					}
				}
				if n := rec.count("get/zero/" + metrics.OutcomeRejected); n != 1 {
					t.Errorf("reads_total{get,zero,rejected} = %d", n)
				}
			}
		})
	}
}

// watchError reads the first event of w, which must be an ERROR, and
// returns its error; w must close after it.
func watchError(t *testing.T, w watch.Interface) error {
	t.Helper()
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed without an event")
		}
		if ev.Type != watch.Error {
			t.Fatalf("first watch event is %s, want ERROR", ev.Type)
		}
		return apierrors.FromObject(ev.Object)
	case <-time.After(longWait):
		t.Fatal("no watch event")
	}
	return nil
}
