package watchcache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// heldLists holds the LISTs whose context carries heldCall until the test
// releases them, and tells the test when one arrives.
type heldLists struct {
	storage.Interface
	arrived chan struct{}
	release chan struct{}
}

func (h *heldLists) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if ctx.Value(heldCall{}) != nil {
		h.arrived <- struct{}{}
		<-h.release
	}
	return h.Interface.GetList(ctx, key, opts, listObj)
}

// TestFallbackBudgetRefusesWhileAListIsInFlight: the cache is held back,
// so consistent reads time out and fall back to etcd. While one LIST of
// every pod is in etcd's hands (held here, as a stalled etcd would), the
// fallbacks in flight cover the whole cache: the default budget. Further
// reads that time out get 429 with Retry-After, counted as over_budget,
// instead of piling more copies of the resource onto etcd and the
// apiserver. Once that LIST is answered, fallbacks go again. With the
// budget unbounded every read falls back, as upstream's do.
func TestFallbackBudgetRefusesWhileAListIsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name       string
		budget     float64
		wantRefuse bool
	}{
		{"default", 0, true},
		{"unbounded", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := &heldLists{arrived: make(chan struct{}, 1), release: make(chan struct{})}
			rec := newRecorder()
			e := cachetest.Start(t, cachetest.WithRecorder(rec),
				cachetest.WithStorageWrapper(func(s storage.Interface) storage.Interface { held.Interface = s; return held }),
				cachetest.WithOptions(watchcache.Options{
					ConsistentReadsFromCache: on(), ConsistentReadTimeout: 50 * time.Millisecond,
					FallbackBudget: tc.budget,
				}))
			ctx := context.Background()
			for i := 0; i < 4; i++ {
				create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), "")
			}
			waitFor(t, "the cache to hold the pods", func() bool { return cachedCount(t, e.Cache) == 4 })
			e.Gate.Pause()
			create(t, e.Etcd, "ns", "late", "")

			first := make(chan error, 1)
			go func() {
				first <- e.Cache.GetList(context.WithValue(ctx, heldCall{}, true), "/pods/", listOpts(""), &example.PodList{})
			}()
			select {
			case <-held.arrived:
			case <-time.After(longWait):
				t.Fatal("the first LIST did not fall back to etcd")
			}
			list := &example.PodList{}
			lerr := e.Cache.GetList(ctx, "/pods/", listOpts(""), list)
			gerr := e.Cache.Get(ctx, "/pods/ns/late", storage.GetOptions{}, &example.Pod{})
			if tc.wantRefuse {
				if s := retryAfter(t, lerr); s < 1 {
					t.Fatalf("LIST over budget: Retry-After %d", s)
				}
				retryAfter(t, gerr)
				if n := rec.count(metrics.VerbList + "/" + metrics.RequestedConsistent + "/" + metrics.OutcomeOverBudget); n != 1 {
					t.Fatalf("%v over-budget LISTs counted, want 1", n)
				}
			} else if lerr != nil || gerr != nil || !names(list)["late"] {
				t.Fatalf("unbounded: LIST %v (%v), GET %v; want both from etcd", lerr, names(list), gerr)
			}
			close(held.release)
			if err := <-first; err != nil {
				t.Fatalf("the held fallback LIST: %v", err)
			}
			list = &example.PodList{}
			if err := e.Cache.GetList(ctx, "/pods/", listOpts(""), list); err != nil || !names(list)["late"] {
				t.Fatalf("LIST once the budget is free: %v %v; want etcd's answer", err, names(list))
			}
		})
	}
}
