package watchcache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

// TestProgressFromOwnWrites: two caches of one etcd share an Oracle and so
// its ledger. After writes of the leases cache, a consistent LIST of pods
// needs the pod cache at the last lease's revision. With the gate on, and
// every revision in between a lease written through this process, the pod
// cache gets there without a progress request. A revision the ledger
// lacks (a write straight to etcd), the gate off, or a pod written through
// the cache whose event the pod cache has not applied yet, all leave it to
// a progress request, and the LIST still holds every pod. In the last case
// the pod cache catches up on the ledger once it applies the pod.
func TestProgressFromOwnWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		gate bool
		// foreign: one lease is written straight to etcd, past the ledger.
		foreign bool
		// podHeld: a pod is written through the pod cache while its watch
		// is held back, before the leases.
		podHeld bool
		// wantAdvance: the pod cache catches up on the ledger;
		// wantProgress: it sends a progress request.
		wantAdvance, wantProgress bool
	}{
		{name: "leases written through the cache", gate: true, wantAdvance: true},
		{name: "gate off", gate: false, wantProgress: true},
		{name: "a lease written straight to etcd", gate: true, foreign: true, wantProgress: true},
		{name: "a pod written whose event is held back", gate: true, podHeld: true, wantAdvance: true, wantProgress: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := tc.gate
			server, pods, leases, rec := podsAndLeases(t, watchcache.Options{ConsistentReadsFromCache: on(), RevisionsFromWrites: on(),
				ProgressFromOwnWrites: &gate, ConsistentReadTimeout: longWait})
			ctx := context.Background()

			p0 := create(t, pods.Cache, "ns", "p0", "")
			waitFor(t, "the pod cache to apply p0", func() bool { return pods.Cache.RV() >= rvOf(t, p0.ResourceVersion) })
			want := map[string]bool{"p0": true}
			progressBefore := pods.Gate.ProgressRequests()
			if tc.podHeld {
				pods.Gate.Pause()
				create(t, pods.Cache, "ns", "p1", "")
				want["p1"] = true
			}
			// The leases cache never applies its leases: it would ask for
			// progress on the watch stream both caches share if its own
			// write's answer came late, and the notification would move
			// the pod cache too.
			leases.Gate.Pause()
			var last uint64
			for i := range 5 {
				l := mkPod("ns", fmt.Sprintf("l%d", i), "")
				out := &example.Pod{}
				if err := leases.Cache.Create(ctx, "/leases/ns/"+l.Name, l, out, 0); err != nil {
					t.Fatal(err)
				}
				last = rvOf(t, out.ResourceVersion)
			}
			if tc.foreign {
				resp, err := server.V3Client.Put(ctx, etcd3testing.AddPrefix("/leases/ns/foreign"), encodePod(t, mkPod("ns", "foreign", "")))
				if err != nil {
					t.Fatal(err)
				}
				last = uint64(resp.Header.Revision)
			}
			if tc.podHeld {
				// The LIST's progress request is held too: the pod cache
				// can only answer once the watch delivers p1.
				go func() {
					waitFor(t, "the LIST to ask for progress", func() bool { return pods.Gate.ProgressRequests() > progressBefore })
					pods.Gate.Resume()
				}()
			}
			got, at := consistentNames(t, pods.Cache)
			if len(got) != len(want) {
				t.Fatalf("consistent LIST holds %v, want %v", got, want)
			}
			for n := range want {
				if !got[n] {
					t.Fatalf("consistent LIST holds %v, want %v", got, want)
				}
			}
			if at < last {
				t.Fatalf("consistent LIST at %d, before the last lease at %d", at, last)
			}
			progress := pods.Gate.ProgressRequests() - progressBefore
			rec.mu.Lock()
			advances := rec.advances
			rec.mu.Unlock()
			if (progress > 0) != tc.wantProgress || (advances > 0) != tc.wantAdvance {
				t.Fatalf("%d progress requests and %d advances on the ledger; want progress requests %v, advances %v", progress, advances, tc.wantProgress, tc.wantAdvance)
			}
		})
	}
}

// podsAndLeases starts etcd, one Oracle, and a pod and a lease cache on
// it with opts, sharing the Oracle and so its ledger; rec records the pod
// cache's metrics.
func podsAndLeases(t *testing.T, opts watchcache.Options) (server *etcd3testing.EtcdTestServer, pods, leases *cachetest.Env, rec *recorder) {
	t.Helper()
	server, o := etcdWithOracle(t)
	rec = newRecorder()
	with := cachetest.WithOptions(opts)
	pods = cachetest.StartOn(t, server.V3Client, with, cachetest.WithOracle(o), cachetest.WithRecorder(rec))
	leases = cachetest.StartOn(t, server.V3Client, with, cachetest.WithOracle(o), cachetest.WithPrefix("/leases/", "leases"))
	return server, pods, leases, rec
}

// TestBoundedZeroReadsSettleOnTheLedger: a bounded rv=0 LIST takes a
// revision it already knows (the oldest recent write of this process, here
// a lease's) and needs no fetch. When nothing of the pods changed since
// the pod cache's revision, and the leases between were written through
// this process, the ledger proves the pod cache current: the read is
// released with no progress request, even though no pod event will come
// to move the cache (a restart storm after the churn stopped, when etcd
// may drop progress requests for a while). A revision the ledger lacks
// leaves the read to a progress request as before; so does a pod of this
// process whose event is still on its way, and then the cache is not
// advanced past it on the ledger.
func TestBoundedZeroReadsSettleOnTheLedger(t *testing.T) {
	for _, tc := range []struct {
		name string
		// foreign: a lease is written straight to etcd, before the others.
		foreign bool
		// podHeld: a pod is written through the pod cache while its watch
		// is held back, before the leases.
		podHeld                   bool
		wantAdvance, wantProgress bool
	}{
		{name: "leases written through the cache", wantAdvance: true},
		{name: "a lease written straight to etcd", foreign: true, wantProgress: true},
		{name: "a pod written whose event is held back", podHeld: true, wantProgress: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A long bound, so the leases' revisions are recent whatever
			// the machine's speed: the read must never need a fetch.
			server, pods, leases, rec := podsAndLeases(t, watchcache.Options{FreshResourceVersionZero: on(), RevisionsFromWrites: on(),
				ProgressFromOwnWrites: on(), ConsistentReadTimeout: longWait, ZeroReadStaleness: time.Minute})
			ctx := context.Background()

			// p0 goes straight to etcd: it is no recent revision of this
			// process, so the read's revision is a later one.
			p0 := create(t, pods.Etcd, "ns", "p0", "")
			waitFor(t, "the pod cache to apply p0", func() bool { return pods.Cache.RV() >= rvOf(t, p0.ResourceVersion) })
			want := map[string]bool{"p0": true}
			if tc.podHeld {
				pods.Gate.Pause()
				create(t, pods.Cache, "ns", "p1", "")
				want["p1"] = true
			}
			if tc.foreign {
				if _, err := server.V3Client.Put(ctx, etcd3testing.AddPrefix("/leases/ns/foreign"), encodePod(t, mkPod("ns", "foreign", ""))); err != nil {
					t.Fatal(err)
				}
			}
			// As in TestProgressFromOwnWrites, the leases cache never
			// applies its leases, so it never asks for progress on the
			// stream both caches share.
			leases.Gate.Pause()
			for i := range 3 {
				l := mkPod("ns", fmt.Sprintf("l%d", i), "")
				if err := leases.Cache.Create(ctx, "/leases/ns/"+l.Name, l, &example.Pod{}, 0); err != nil {
					t.Fatal(err)
				}
			}
			progressBefore := pods.Gate.ProgressRequests()
			if tc.podHeld {
				go func() {
					waitFor(t, "the LIST to ask for progress", func() bool { return pods.Gate.ProgressRequests() > progressBefore })
					pods.Gate.Resume()
				}()
			}
			list := &example.PodList{}
			if err := pods.Cache.GetList(ctx, "/pods/", listOpts("0"), list); err != nil {
				t.Fatal(err)
			}
			if got := names(list); len(got) != len(want) || !got["p0"] || (tc.podHeld && !got["p1"]) {
				t.Fatalf("rv=0 LIST holds %v, want %v", got, want)
			}
			if n := rec.count("list/zero/" + metrics.OutcomeCache); n != 1 {
				t.Fatalf("reads_total{list,zero,cache} = %d, want 1", n)
			}
			progress := pods.Gate.ProgressRequests() - progressBefore
			rec.mu.Lock()
			advances := rec.advances
			rec.mu.Unlock()
			if (progress > 0) != tc.wantProgress || (advances > 0) != tc.wantAdvance {
				t.Fatalf("%d progress requests and %d advances on the ledger; want progress requests %v, advances %v",
					progress, advances, tc.wantProgress, tc.wantAdvance)
			}
		})
	}
}

// TestLedgerNamesTheKeysEtcdHolds: the key a write through the cache
// records in the ledger is the etcd key the store wrote, at the revision
// etcd committed it at, for Create, GuaranteedUpdate and Delete alike.
func TestLedgerNamesTheKeysEtcdHolds(t *testing.T) {
	server, o := etcdWithOracle(t)
	opts := cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), RevisionsFromWrites: on(), ProgressFromOwnWrites: on()})
	e := cachetest.StartOn(t, server.V3Client, opts, cachetest.WithOracle(o))
	ctx := context.Background()
	key := etcdKey("ns", "a")
	otherPrefix := etcd3testing.AddPrefix("/leases/")
	podPrefix := etcd3testing.AddPrefix("/pods/")

	created := create(t, e.Cache, "ns", "a", "")
	rev := int64(rvOf(t, created.ResourceVersion))
	resp, err := server.V3Client.Client.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != rev {
		t.Fatalf("etcd holds %v (%v) at %s, want the pod written at %d", resp, err, key, rev)
	}
	check := func(what string, rev int64) {
		t.Helper()
		if got := o.Ledger().Prove(otherPrefix, rev-1, rev); got != oracle.Proven {
			t.Fatalf("%s at %d: the ledger proves %d for another prefix, want Proven", what, rev, got)
		}
		if got := o.Ledger().Prove(podPrefix, rev-1, rev); got != oracle.Pending {
			t.Fatalf("%s at %d: the ledger proves %d for the pods' prefix, want Pending (the pod's own write)", what, rev, got)
		}
	}
	check("create", rev)

	updated := &example.Pod{}
	if err := e.Cache.GuaranteedUpdate(ctx, cachetest.PodKey(created), updated, false, nil, setNode("node-b"), nil); err != nil {
		t.Fatal(err)
	}
	check("update", int64(rvOf(t, updated.ResourceVersion)))

	deleted := &example.Pod{}
	if err := e.Cache.Delete(ctx, cachetest.PodKey(created), deleted, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	check("delete", int64(rvOf(t, deleted.ResourceVersion)))
}
