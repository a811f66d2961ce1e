package watchcache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// etcdKey is where the etcd3 store keeps pod ns/name.
func etcdKey(ns, name string) string {
	return etcd3testing.AddPrefix("/pods/" + ns + "/" + name)
}

// encodePod is a pod as the etcd3 store writes it, for raw transactions.
func encodePod(t *testing.T, p *example.Pod) string {
	t.Helper()
	b, err := runtime.Encode(cachetest.ProtoCodec, p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// txn commits ops in one etcd transaction and returns its revision: every
// key it changes gets that revision.
func txn(t *testing.T, c *clientv3.Client, ops ...clientv3.Op) uint64 {
	t.Helper()
	resp, err := c.Txn(context.Background()).Then(ops...).Commit()
	if err != nil {
		t.Fatal(err)
	}
	return uint64(resp.Header.Revision)
}

// watchAll opens a watch of every pod from rv.
func watchAll(t *testing.T, c *watchcache.Cache, rv uint64) watch.Interface {
	t.Helper()
	w, err := c.Watch(context.Background(), "/pods/", storage.ListOptions{ResourceVersion: fmt.Sprint(rv), Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// podOf is the pod an event carries (a fanout.Shared, copied out).
func podOf(t *testing.T, ev watch.Event) *example.Pod {
	t.Helper()
	obj := ev.Object
	if s, ok := obj.(interface{ GetObject() runtime.Object }); ok {
		obj = s.GetObject()
	}
	p, ok := obj.(*example.Pod)
	if !ok {
		t.Fatalf("%s event carries %T", ev.Type, ev.Object)
	}
	return p
}

// collect reads n events from w, failing after longWait.
func collect(t *testing.T, w watch.Interface, n int) []watch.Event {
	t.Helper()
	var out []watch.Event
	deadline := time.After(longWait)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(out), n)
			}
			out = append(out, ev)
		case <-deadline:
			t.Fatalf("got %d of %d events: %v", len(out), n, out)
		}
	}
	return out
}

// cachedCount is how many pods the cache holds as it is, with no wait:
// an rv=0 LIST would wait for freshness under the default
// FreshResourceVersionZero, and time out under a short
// ConsistentReadTimeout on a loaded machine.
func cachedCount(t *testing.T, c *watchcache.Cache) int {
	t.Helper()
	return c.HeldForTest()
}

func consistentNames(t *testing.T, c *watchcache.Cache) (map[string]bool, uint64) {
	t.Helper()
	list := &example.PodList{}
	if err := c.GetList(context.Background(), "/pods/", listOpts(""), list); err != nil {
		t.Fatal(err)
	}
	return names(list), rvOf(t, list.ResourceVersion)
}

// TestTransactionOfDeletes: one etcd transaction deletes five pods, so all
// five deletions share a revision. Every one of them must reach the cache,
// its history and its watchers (the cache used to apply the first and keep
// the other four forever).
func TestTransactionOfDeletes(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on()}))
	var last *example.Pod
	for i := 0; i < 5; i++ {
		last = create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), "node")
	}
	before := rvOf(t, last.ResourceVersion)
	w := watchAll(t, e.Cache, before)
	var ops []clientv3.Op
	for i := 0; i < 5; i++ {
		ops = append(ops, clientv3.OpDelete(etcdKey("ns", fmt.Sprintf("p%d", i))))
	}
	rev := txn(t, e.Client, ops...)

	got, at := consistentNames(t, e.Cache)
	if len(got) != 0 || at < rev {
		t.Fatalf("consistent LIST at %d holds %v after the transaction at %d, want none", at, got, rev)
	}
	for i := 0; i < 5; i++ {
		err := e.Cache.Get(context.Background(), fmt.Sprintf("/pods/ns/p%d", i), storage.GetOptions{}, &example.Pod{})
		if !storage.IsNotFound(err) {
			t.Fatalf("GET p%d: %v, want not found", i, err)
		}
	}
	evs := collect(t, w, 5)
	for i, ev := range evs {
		p := podOf(t, ev)
		if ev.Type != watch.Deleted || p.Name != fmt.Sprintf("p%d", i) || rvOf(t, p.ResourceVersion) != rev {
			t.Fatalf("event %d: %s %s@%s, want DELETED p%d@%d", i, ev.Type, p.Name, p.ResourceVersion, i, rev)
		}
	}
	// Exact reads on either side of the transaction: all or nothing.
	for _, tc := range []struct {
		rv   uint64
		want int
	}{{before, 5}, {rev, 0}} {
		list := &example.PodList{}
		opts := listOpts(fmt.Sprint(tc.rv))
		opts.ResourceVersionMatch = "Exact"
		if err := e.Cache.GetList(context.Background(), "/pods/", opts, list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != tc.want {
			t.Fatalf("Exact LIST at %d: %d pods, want %d", tc.rv, len(list.Items), tc.want)
		}
	}
}

// TestTransactionOfPuts: one transaction creates three pods and changes a
// fourth.
func TestTransactionOfPuts(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on()}))
	old := create(t, e.Cache, "ns", "old", "node-a")
	w := watchAll(t, e.Cache, rvOf(t, old.ResourceVersion))
	changed := mkPod("ns", "old", "node-b")
	ops := []clientv3.Op{clientv3.OpPut(etcdKey("ns", "old"), encodePod(t, changed))}
	for i := 0; i < 3; i++ {
		ops = append(ops, clientv3.OpPut(etcdKey("ns", fmt.Sprintf("new%d", i)), encodePod(t, mkPod("ns", fmt.Sprintf("new%d", i), "node-b"))))
	}
	rev := txn(t, e.Client, ops...)

	got, _ := consistentNames(t, e.Cache)
	if len(got) != 4 {
		t.Fatalf("consistent LIST holds %v, want old and new0..2", got)
	}
	p := &example.Pod{}
	if err := e.Cache.Get(context.Background(), "/pods/ns/old", storage.GetOptions{ResourceVersion: fmt.Sprint(rev)}, p); err != nil || p.Spec.NodeName != "node-b" {
		t.Fatalf("GET old at %d: node %q, %v; want node-b", rev, p.Spec.NodeName, err)
	}
	evs := collect(t, w, 4)
	wantTypes := []watch.EventType{watch.Modified, watch.Added, watch.Added, watch.Added}
	for i, ev := range evs {
		if ev.Type != wantTypes[i] {
			t.Fatalf("event %d is %s, want %s (%v)", i, ev.Type, wantTypes[i], evs)
		}
	}
}

// TestLeaseExpiryDeletesEveryObject: objects attached to one lease (as
// the etcd3 store attaches TTL'd objects such as Events to a shared lease)
// are deleted by etcd in one revision when the lease expires.
func TestLeaseExpiryDeletesEveryObject(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on()}))
	ctx := context.Background()
	keep := create(t, e.Cache, "ns", "keep", "")
	w := watchAll(t, e.Cache, rvOf(t, keep.ResourceVersion))
	putLeasedPods(ctx, t, e.Client, 2, 4)
	evs := collect(t, w, 8) // four ADDED, then the four DELETED of the expiry
	var deletedAt []string
	for i, ev := range evs {
		want := watch.Added
		if i >= 4 {
			want = watch.Deleted
			deletedAt = append(deletedAt, podOf(t, ev).ResourceVersion)
		}
		if ev.Type != want {
			t.Fatalf("event %d is %s, want %s", i, ev.Type, want)
		}
	}
	for _, rv := range deletedAt[1:] {
		if rv != deletedAt[0] {
			t.Fatalf("deletions at %v: the expiry should be one revision", deletedAt)
		}
	}
	got, _ := consistentNames(t, e.Cache)
	if len(got) != 1 || !got["keep"] {
		t.Fatalf("after the lease expired the cache holds %v, want only keep", got)
	}
}

// TestNoReadSeesHalfATransaction lets only the first event of a
// three-key transaction reach the cache. Nothing the cache serves may show
// that part alone: rv=0 still answers the state before the transaction, and
// a consistent read does not take the cache's word for the transaction's
// revision (it falls back to etcd, which has all of it).
func TestNoReadSeesHalfATransaction(t *testing.T) {
	// rv=0 at upstream's meaning (the cache as it is), the read that could
	// see half a transaction: under FreshResourceVersionZero it would wait
	// for the held-back transaction's revision when no recent one is at
	// hand, and time out.
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(),
		FreshResourceVersionZero: off(),
		ConsistentReadTimeout:    300 * time.Millisecond,
	}))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), "")
	}
	waitFor(t, "the cache to hold three pods", func() bool { return cachedCount(t, e.Cache) == 3 })
	e.Gate.Pause()
	e.Gate.Let(1)
	rev := txn(t, e.Client,
		clientv3.OpDelete(etcdKey("ns", "p0")),
		clientv3.OpDelete(etcdKey("ns", "p1")),
		clientv3.OpDelete(etcdKey("ns", "p2")))

	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), list); err != nil {
		t.Fatal(err)
	}
	if n := len(list.Items); n != 3 && n != 0 {
		t.Fatalf("rv=0 LIST holds %d of 3 pods: part of the transaction at %d", n, rev)
	}
	got, at := consistentNames(t, e.Cache)
	if len(got) != 0 || at < rev {
		t.Fatalf("consistent LIST at %d holds %v, want none (transaction at %d)", at, got, rev)
	}
	if c := e.Cache.RV(); c >= rev {
		t.Fatalf("cache revision %d claims the transaction at %d with part of it held back", c, rev)
	}
	e.Gate.Resume()
	waitFor(t, "the cache to apply the whole transaction", func() bool { return e.Cache.RV() >= rev && cachedCount(t, e.Cache) == 0 })
	if err := e.Cache.Get(ctx, "/pods/ns/p2", storage.GetOptions{ResourceVersion: "0"}, &example.Pod{}); !storage.IsNotFound(err) && !apierrors.IsNotFound(err) {
		t.Fatalf("GET p2 after the transaction: %v, want not found", err)
	}
}

// putLeasedPods writes n pods, ns/ttl0 and on, straight to etcd under one
// lease of ttl seconds: etcd deletes them in one revision when it expires.
func putLeasedPods(ctx context.Context, t *testing.T, c *clientv3.Client, ttl int64, n int) {
	t.Helper()
	lease, err := c.Grant(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("ttl%d", i)
		if _, err := c.Put(ctx, etcdKey("ns", name), encodePod(t, mkPod("ns", name, "")), clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
	}
}
