package watchcache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// TestDirectWritesNeedNoProgressRequest: with no reader waiting, writes
// reach the cache. Through the etcd3 store the reflector must ask etcd for
// progress to complete the last revision of each burst, unless the cache
// knows the revisions of its own writes (RevisionsFromWrites): a revision
// the store wrote holds one key, so it is whole on arrival. Reading etcd
// itself (DirectEtcdWatch) every revision arrives whole. Neither sends a
// progress request. The clock is fake, so the reflector waits for the
// answer of a write in flight as long as it takes.
func TestDirectWritesNeedNoProgressRequest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		direct     bool
		ownWrites  bool
		needsAsked bool
	}{
		{name: "through the store", needsAsked: true},
		{name: "through the store, own writes known", ownWrites: true},
		{name: "direct", direct: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			o := watchcache.Options{ConsistentReadsFromCache: off(), FreshResourceVersionZero: off()}
			if tc.ownWrites {
				o = watchcache.Options{ConsistentReadsFromCache: on(), FreshResourceVersionZero: off(), RevisionsFromWrites: on(),
					Clock: testingclock.NewFakeClock(time.Now())}
			}
			opts := []cachetest.Option{cachetest.WithRecorder(rec), cachetest.WithOptions(o)}
			if tc.direct {
				opts = append(opts, cachetest.Direct)
			} else {
				opts = append(opts, cachetest.ThroughStore)
			}
			e := cachetest.Start(t, opts...)
			for i := 0; i < 5; i++ {
				create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), "node")
				waitFor(t, "rv=0 to hold the new pod", func() bool { return cachedCount(t, e.Cache) == i+1 })
			}
			rec.mu.Lock()
			progress := rec.progress
			rec.mu.Unlock()
			if !tc.needsAsked && progress != 0 {
				t.Fatalf("%d progress requests for 5 writes; want none", progress)
			}
			if tc.needsAsked && progress == 0 {
				t.Fatal("no progress request for 5 writes through the store: then what completed their revisions?")
			}
		})
	}
}

// TestDirectTransactionsReachTheCacheWhole: reading etcd itself, a
// transaction of puts, one of deletes and a lease expiry each reach the
// cache's reads and watchers as one revision.
func TestDirectTransactionsReachTheCacheWhole(t *testing.T) {
	e := cachetest.Start(t, cachetest.Direct, cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on()}))
	ctx := context.Background()
	old := create(t, e.Cache, "ns", "old", "node-a")
	w := watchAll(t, e.Cache, rvOf(t, old.ResourceVersion))

	ops := []clientv3.Op{clientv3.OpPut(etcdKey("ns", "old"), encodePod(t, mkPod("ns", "old", "node-b")))}
	for i := 0; i < 3; i++ {
		ops = append(ops, clientv3.OpPut(etcdKey("ns", fmt.Sprintf("new%d", i)), encodePod(t, mkPod("ns", fmt.Sprintf("new%d", i), "node-b"))))
	}
	puts := txn(t, e.Client, ops...)
	got, at := consistentNames(t, e.Cache)
	if len(got) != 4 || at < puts {
		t.Fatalf("consistent LIST at %d holds %v after the puts at %d, want old and new0..2", at, got, puts)
	}
	dels := txn(t, e.Client, clientv3.OpDelete(etcdKey("ns", "new0")), clientv3.OpDelete(etcdKey("ns", "new1")))
	got, _ = consistentNames(t, e.Cache)
	if len(got) != 2 || got["new0"] || got["new1"] {
		t.Fatalf("consistent LIST holds %v after the deletes at %d, want old and new2", got, dels)
	}

	putLeasedPods(ctx, t, e.Client, 1, 3)
	// 4 + 2 events of the transactions, 3 ADDED, 3 DELETED of the expiry.
	evs := collect(t, w, 12)
	revs := map[string]int{}
	for _, ev := range evs {
		revs[string(ev.Type)+"@"+podOf(t, ev).ResourceVersion]++
	}
	if revs[fmt.Sprintf("%s@%d", watch.Deleted, dels)] != 2 {
		t.Fatalf("events %v: want the 2 deletes at %d", revs, dels)
	}
	expiry := evs[len(evs)-1]
	if n := revs[string(watch.Deleted)+"@"+podOf(t, expiry).ResourceVersion]; n != 3 {
		t.Fatalf("events %v: want the lease expiry's 3 deletes at one revision", revs)
	}
	for _, n := range []string{"ttl0", "ttl1", "ttl2"} {
		if err := e.Cache.Get(ctx, "/pods/ns/"+n, storage.GetOptions{}, &example.Pod{}); !storage.IsNotFound(err) {
			t.Fatalf("GET %s after the expiry: %v, want not found", n, err)
		}
	}
}

// TestDirectStats: reading etcd itself, the cache answers Stats as the
// etcd3 store's size estimator would: the object count, and the mean size
// of the stored values.
func TestDirectStats(t *testing.T) {
	e := cachetest.Start(t, cachetest.Direct)
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), fmt.Sprintf("node-%d", i*1000))
	}
	resp, err := e.Client.Get(ctx, etcdKey("ns", ""), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, kv := range resp.Kvs {
		total += int64(len(kv.Value))
	}
	st, err := e.Cache.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.ObjectCount != 4 || st.EstimatedAverageObjectSizeBytes != total/4 {
		t.Fatalf("stats %+v, want 4 objects of %d bytes on average", st, total/4)
	}
}
