package watchcache_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/apis/example"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// TestQuietCacheDoesNotWithholdProgress: etcd answers a progress request
// on a watch stream only while no watch on that stream starts beyond its
// current revision (mvcc progressIfSync, etcd-io/etcd#20229). Every cache
// of one etcd client shares one stream. A quiet resource that has just
// listed at etcd's revision must therefore not watch from the revision
// after it: until the next write anywhere, no cache on the stream would
// get a progress notification, so a write held for its proof and every
// consistent read behind it would wait. (Found when a cache stayed one
// revision behind for 30 s after a partition healed, TestRestartTimeTravel.)
func TestQuietCacheDoesNotWithholdProgress(t *testing.T) {
	rec := newRecorder()
	pods := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(), ConsistentReadTimeout: 10 * time.Second, TimeoutAction: watchcache.TimeoutReject,
	}))
	ctx := context.Background()
	// The pods cache does not see x yet.
	pods.Gate.Pause()
	x := create(t, pods.Etcd, "ns", "x", "")
	// A quiet resource on the same client (so the same stream) lists at
	// x's revision, etcd's current one, and opens its watch.
	leases := cachetest.StartOn(t, pods.Server.V3Client, cachetest.WithPrefix("/leases/", "leases"))
	waitFor(t, "the leases watch to open", func() bool { return leases.Gate.Watches() > 0 })
	if rv := leases.Cache.RV(); rv != rvOf(t, x.ResourceVersion) {
		t.Fatalf("leases listed at %d, want etcd's revision %s", rv, x.ResourceVersion)
	}
	time.Sleep(100 * time.Millisecond) // let etcd register the watch
	// Now the pods cache gets x, and must prove its revision complete
	// with a progress notification before a consistent read sees it.
	pods.Gate.Resume()
	list := &example.PodList{}
	start := time.Now()
	if err := pods.Cache.GetList(ctx, "/pods/", listOpts(""), list); err != nil || !names(list)["x"] {
		t.Fatalf("consistent LIST with no write after the quiet cache's list: %v %v", err, names(list))
	}
	if n := rec.count("list/consistent/" + metrics.OutcomeCache); n != 1 {
		t.Errorf("reads_total{list,consistent,cache} = %d, want 1", n)
	}
	t.Logf("served from the cache after %v", time.Since(start))
}
