package watchcache_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/reflector"
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

// quietResources is how many caches besides the pods' follow the member
// that loses its leader, to count their watch opens.
const quietResources = 7

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
	cl, leader, follower := startClusterWithLeader(t)
	rec := &relistRecorder{relists: map[string]int{}}
	// Every cache on the member shares one backoff, as the caches of one
	// etcd cluster do under NewStorageDecorator.
	opts := cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), LeaderBackoff: watchcache.NewLeaderBackoff()})
	client := cl.KubeClient(t, follower)
	e := cachetest.StartOn(t, client, cachetest.WithRecorder(rec), opts)
	caches := []*cachetest.Env{e}
	for i := range quietResources {
		name := fmt.Sprintf("quiet%d", i)
		caches = append(caches, cachetest.StartOn(t, client, opts, cachetest.WithPrefix("/"+name+"/", name)))
	}
	opened := func() (n int64) {
		for _, c := range caches {
			n += c.Gate.Watches()
		}
		return n
	}
	writer := cachetest.StartOn(t, cl.KubeClient(t, leader))

	first := create(t, writer.Etcd, "ns", "before", "")
	waitFor(t, "the cache to see the first pod", func() bool { return e.Cache.RV() >= rvOf(t, first.ResourceVersion) })
	w := watchAll(t, e.Cache, rvOf(t, first.ResourceVersion))

	cl.Isolate(follower)
	openedBefore, isolated := opened(), time.Now()
	const n = 25
	var last *example.Pod
	for i := 0; i < n; i++ { // ~5 s of writes through the leader
		last = create(t, writer.Etcd, "ns", fmt.Sprintf("during-%d", i), "")
		time.Sleep(200 * time.Millisecond) // paces the load; nothing waits on it
	}
	reopened, partition := opened()-openedBefore, time.Since(isolated)
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
	// While the member has no leader, each watch fails at once. The
	// caches share one backoff: each waits at least half the step, and
	// the step doubles with every failure of any of them, so after the
	// few failures that take it to LeaderRetryCap a cache opens at most
	// one watch per half cap. A steady LeaderRetry pace per cache opens
	// one every 100-150 ms each (eight per cache and second of
	// leaderlessness here), far past this bound.
	steps := int64(math.Ceil(math.Log2(float64(reflector.LeaderRetryCap) / float64(reflector.LeaderRetry))))
	perCache := 1 + int64(math.Ceil(float64(partition)/float64(reflector.LeaderRetryCap/2)))
	if limit := int64(len(caches))*perCache + steps; reopened > limit {
		t.Fatalf("%d caches opened %d watches in a %v partition; want at most %d with a shared backoff", len(caches), reopened, partition, limit)
	}
	t.Logf("%d caches opened %d watches in a %v partition", len(caches), reopened, partition)
	if len(rec.relists) != 1 || rec.relists[metrics.RelistInitial] != 1 || rec.terminated != 0 {
		t.Fatalf("relists %v, %d watchers closed (after %d re-watches); want only the initial list and none closed", rec.relists, rec.terminated, rec.retries)
	}
}
