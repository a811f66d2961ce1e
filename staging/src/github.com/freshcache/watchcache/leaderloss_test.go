package watchcache_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// relistRecorder counts relists by reason, re-watches and closed watchers.
type relistRecorder struct {
	metrics.Discard
	mu         sync.Mutex
	relists    map[string]int
	retries    int
	terminated int
}

func (r *relistRecorder) Relisted(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relists[reason]++
}

func (r *relistRecorder) WatchRetried() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries++
}

func (r *relistRecorder) WatcherTerminated(string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated++
}

// TestLeaderLossKeepsHistoryAndWatchers: the member the cache watches is
// cut off from its peers for 5 s while writes go on through the leader.
// The member loses its leader, so the cache's watch fails with an internal
// error (the etcd3 watch requires a leader). As upstream's cacher, the
// cache watches again from its revision until the member is back: no
// relist, no watcher closed, no 410 for a client resuming from before the
// outage, and every write arrives.
func TestLeaderLossKeepsHistoryAndWatchers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster and waits out a 5 s partition")
	}
	cl := cachetest.StartCluster(t)
	leader, follower := -1, -1
	waitFor(t, "a leader", func() bool {
		leader, follower = cl.Roles()
		return leader >= 0 && follower >= 0
	})
	rec := &relistRecorder{relists: map[string]int{}}
	e := cachetest.StartOn(t, cl.KubeClient(t, follower), cachetest.WithRecorder(rec),
		cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on()}))
	writer := cachetest.StartOn(t, cl.KubeClient(t, leader))

	first := create(t, writer.Etcd, "ns", "before", "")
	waitFor(t, "the cache to see the first pod", func() bool { return e.Cache.RV() >= rvOf(t, first.ResourceVersion) })
	w := watchAll(t, e.Cache, rvOf(t, first.ResourceVersion))

	cl.Isolate(follower)
	const n = 25
	var last *example.Pod
	for i := 0; i < n; i++ { // ~5 s of writes through the leader
		last = create(t, writer.Etcd, "ns", fmt.Sprintf("during-%d", i), "")
		time.Sleep(200 * time.Millisecond) // paces the load; nothing waits on it
	}
	cl.Heal()

	evs := collect(t, w, n)
	for i, ev := range evs {
		if ev.Type != watch.Added || podOf(t, ev).Name != fmt.Sprintf("during-%d", i) {
			t.Fatalf("event %d: %s %s, want ADDED during-%d", i, ev.Type, podOf(t, ev).Name, i)
		}
	}
	waitFor(t, "the cache to catch up", func() bool { return e.Cache.RV() >= rvOf(t, last.ResourceVersion) })
	// A client that last saw the first pod resumes without a 410.
	resumed := watchAll(t, e.Cache, rvOf(t, first.ResourceVersion))
	if got := collect(t, resumed, n); podOf(t, got[n-1]).Name != last.Name {
		t.Fatalf("resumed watch ends at %s, want %s", podOf(t, got[n-1]).Name, last.Name)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.retries == 0 {
		t.Fatal("the cache's watch never failed: the partition did not cost the member its leader, so this test proved nothing")
	}
	if len(rec.relists) != 1 || rec.relists[metrics.RelistInitial] != 1 || rec.terminated != 0 {
		t.Fatalf("relists %v, %d watchers closed (after %d re-watches); want only the initial list and none closed", rec.relists, rec.terminated, rec.retries)
	}
}
