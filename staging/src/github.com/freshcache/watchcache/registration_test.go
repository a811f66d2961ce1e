package watchcache_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// heldRevision holds GetCurrentResourceVersion, once armed, until the test
// releases it: the one place between a watch's plan and its registration
// where the cache calls the storage it was given.
type heldRevision struct {
	storage.Interface
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

// heldCall marks the context of the call to hold.
type heldCall struct{}

func (h *heldRevision) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	h.mu.Lock()
	armed := h.armed && ctx.Value(heldCall{}) != nil
	if armed {
		h.armed = false
	}
	h.mu.Unlock()
	if armed {
		close(h.reached)
		select {
		case <-h.release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return h.Interface.GetCurrentResourceVersion(ctx)
}

// TestWatchPlannedReadyRegisteredPendingGets429: a watch planned while the
// cache was ready, which the cache would register only after it went
// pending (a relist it cannot finish), is refused with 429 and
// Retry-After, as a watch that arrives while pending is. Registered, it
// would get nothing until the relist ends it, or for as long as etcd
// stays away. Here the watch-list of the gates-off path waits on etcd's
// revision while the cache goes pending.
func TestWatchPlannedReadyRegisteredPendingGets429(t *testing.T) {
	held := &heldRevision{reached: make(chan struct{}), release: make(chan struct{})}
	e := cachetest.Start(t,
		cachetest.WithStorageWrapper(func(s storage.Interface) storage.Interface { held.Interface = s; return held }),
		cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: off(), ListPageSize: reflectorPage}))
	ctx := context.Background()
	a := create(t, e.Cache, "ns", "a", "")
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })
	held.mu.Lock()
	held.armed = true
	held.mu.Unlock()

	type result struct {
		w   watch.Interface
		err error
	}
	done := make(chan result, 1)
	go func() {
		initial := true
		w, err := e.Cache.Watch(context.WithValue(ctx, heldCall{}, true), "/pods/", storage.ListOptions{
			ResourceVersion: "", SendInitialEvents: &initial, Recursive: true,
			Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, AllowWatchBookmarks: true},
		})
		done <- result{w, err}
	}()
	select {
	case <-held.reached:
	case <-time.After(longWait):
		t.Fatal("the watch-list did not ask for etcd's revision")
	}
	e.Gate.FailLists(reflectorPage, errors.New("etcd unreachable"))
	gone := apierrors.NewResourceExpired("compacted").ErrStatus
	e.Gate.Inject(watch.Event{Type: watch.Error, Object: &gone})
	waitFor(t, "the cache to go pending", func() bool { return !e.Cache.Ready() })
	close(held.release)

	var r result
	select {
	case r = <-done:
	case <-time.After(longWait):
		t.Fatal("the watch did not return")
	}
	if r.err == nil {
		defer r.w.Stop()
		select {
		case ev := <-r.w.ResultChan():
			t.Fatalf("a watch opened on a pending cache (first event %v %+v); want 429", ev.Type, ev.Object)
		case <-time.After(time.Second):
			t.Fatal("a watch registered on a pending cache, silent; want 429")
		}
	}
	retryAfter(t, r.err)
	e.Gate.FailLists(0, nil)
	waitFor(t, "the cache to relist", e.Cache.Ready)
}
