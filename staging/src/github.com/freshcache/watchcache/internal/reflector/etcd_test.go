package reflector_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// controlledWatcher passes watches to etcd, but lets the test end the
// reflector's current one, inject a response into it and hold back the
// next Watch call, as controlledStorage does for the store's watches.
type controlledWatcher struct {
	clientv3.Watcher
	watches chan *endableEtcdWatch
	mu      sync.Mutex
	hold    chan struct{}
}

func (c *controlledWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	c.mu.Lock()
	hold := c.hold
	c.hold = nil
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	w := &endableEtcdWatch{out: make(chan clientv3.WatchResponse), end: make(chan struct{}), inject: make(chan clientv3.WatchResponse)}
	go w.pump(ctx, c.Watcher.Watch(ctx, key, opts...))
	c.watches <- w
	return w.out
}

func (c *controlledWatcher) holdNextWatch() chan struct{} {
	release := make(chan struct{})
	c.mu.Lock()
	c.hold = release
	c.mu.Unlock()
	return release
}

type endableEtcdWatch struct {
	out      chan clientv3.WatchResponse
	end      chan struct{}
	inject   chan clientv3.WatchResponse
	stopOnce sync.Once
}

func (w *endableEtcdWatch) pump(ctx context.Context, inner clientv3.WatchChan) {
	defer close(w.out)
	for {
		var resp clientv3.WatchResponse
		select {
		case <-w.end:
			return
		case <-ctx.Done():
			return
		case resp = <-w.inject:
		case r, ok := <-inner:
			if !ok {
				return
			}
			resp = r
		}
		select {
		case w.out <- resp:
		case <-w.end:
			return
		case <-ctx.Done():
			return
		}
	}
}

// stop ends the watch as a broken stream would: its channel closes.
func (w *endableEtcdWatch) stop() { w.stopOnce.Do(func() { close(w.end) }) }

func (w *endableEtcdWatch) send(t *testing.T, resp clientv3.WatchResponse) {
	t.Helper()
	select {
	case w.inject <- resp:
	case <-time.After(30 * time.Second):
		t.Fatal("the reflector did not take the injected response")
	}
}

// directEnv is an env whose reflector reads etcd itself (Config.Etcd).
type directEnv struct {
	*env
	watcher *controlledWatcher
	// pending counts RevisionPending calls, which must never come.
	pending int
	mu      sync.Mutex
}

func startDirect(t *testing.T) *directEnv {
	return directOn(start(t))
}

// directOn is startDirect on an env already started.
func directOn(e *env) *directEnv {
	return &directEnv{env: e, watcher: &controlledWatcher{Watcher: e.client, watches: make(chan *endableEtcdWatch, 16)}}
}

func (d *directEnv) runDirect(t *testing.T, cfg reflector.Config) *reflector.Reflector {
	cfg.Etcd = &reflector.Etcd{
		KV:            d.client,
		Watcher:       d.watcher,
		Key:           reflector.EtcdKey(etcd3testing.PathPrefix(), "/pods/"),
		Codec:         cachetest.ProtoCodec,
		Transformer:   d.tr,
		NewFunc:       cachetest.NewPod,
		GroupResource: schema.GroupResource{Resource: "pods"},
	}
	cfg.RevisionPending = func(uint64) {
		d.mu.Lock()
		d.pending++
		d.mu.Unlock()
	}
	return d.runWith(t, cfg)
}

func (d *directEnv) nextWatch(t *testing.T) *endableEtcdWatch {
	t.Helper()
	select {
	case w := <-d.watcher.watches:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("the reflector did not open a watch")
		return nil
	}
}

// followingDirect is following for a reflector that reads etcd itself.
func followingDirect(ctx context.Context, t *testing.T) (*directEnv, *reflector.Reflector, *endableEtcdWatch) {
	t.Helper()
	d := startDirect(t)
	for i := 0; i < 5; i++ {
		d.create(ctx, t, "pod-"+strconv.Itoa(i))
	}
	r := d.runDirect(t, reflector.Config{})
	first := d.nextWatch(t)
	d.converge(ctx, t)
	return d, r, first
}

func TestEtcdKeyIsTheStoreLayout(t *testing.T) {
	for _, tc := range []struct{ storage, resource, want string }{
		{"/registry", "/pods", "/registry/pods/"},
		{"registry", "/pods/", "/registry/pods/"},
		{"/registry/", "pods", "/registry/pods/"},
		{"", "/pods", "/pods/"},
		{"/registry", "/example.com/widgets", "/registry/example.com/widgets/"},
	} {
		if got := reflector.EtcdKey(tc.storage, tc.resource); got != tc.want {
			t.Errorf("EtcdKey(%q, %q) = %q, want %q", tc.storage, tc.resource, got, tc.want)
		}
	}
}

// TestDirectRevisionsArriveWhole: reading etcd itself, the reflector hands
// over every revision whole as soon as its watch response arrives. With
// no progress request ever sent, a lone create, a three-put transaction, a
// three-delete transaction and a lease expiry all reach the sink, each
// revision in one Apply, and RevisionPending is never called.
func TestDirectRevisionsArriveWhole(t *testing.T) {
	ctx := context.Background()
	d, _, _ := followingDirect(ctx, t)
	step := func(what string, wantBatch int, write func()) {
		t.Helper()
		_, _, _, before := d.counts()
		write()
		d.converge(ctx, t)
		_, _, _, after := d.counts()
		if got := after[len(before):]; len(got) != 1 || got[0] != wantBatch {
			t.Fatalf("%s: applies %v, want one of %d", what, got, wantBatch)
		}
	}
	step("create", 1, func() { d.create(ctx, t, "lone") })
	step("transaction of puts", 3, func() { d.putTxn(ctx, t, "a", "b", "c") })
	step("transaction of deletes", 3, func() { d.deleteTxn(ctx, t, "pod-1", "pod-2", "pod-3") })

	lease, err := d.client.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"ttl-0", "ttl-1", "ttl-2"} {
		data, err := runtime.Encode(cachetest.ProtoCodec, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.client.Put(ctx, etcd3testing.PathPrefix()+"/pods/ns/"+n, string(data), clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
	}
	d.converge(ctx, t)
	d.waitSink(t, "the lease to expire", func() bool {
		d.sink.mu.Lock()
		defer d.sink.mu.Unlock()
		_, left := d.sink.objs["ttl-0"]
		return !left
	})
	d.converge(ctx, t)
	_, _, _, batches := d.counts()
	if last := batches[len(batches)-1]; last != 3 {
		t.Fatalf("applies %v: the lease expiry should be one apply of 3", batches)
	}
	d.checkMonotonic(t)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending != 0 {
		t.Fatalf("RevisionPending called %d times; with Config.Etcd every revision arrives whole", d.pending)
	}
}

// TestDirectDecodesAsTheStore: what the reflector decodes itself, from its
// list and from its watch, equals what the etcd3 store returns.
func TestDirectDecodesAsTheStore(t *testing.T) {
	ctx := context.Background()
	d := startDirect(t)
	mk := func(name, node string) *example.Pod {
		return &example.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": name}},
			Spec:       example.PodSpec{NodeName: node, Hostname: "h-" + name},
		}
	}
	for i := 0; i < 3; i++ {
		p := mk(fmt.Sprintf("listed-%d", i), "node-a")
		if err := d.store.Create(ctx, "/pods/ns/"+p.Name, p, &example.Pod{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	d.runDirect(t, reflector.Config{})
	d.nextWatch(t)
	p := mk("watched", "node-b")
	if err := d.store.Create(ctx, "/pods/ns/watched", p, &example.Pod{}, 0); err != nil {
		t.Fatal(err)
	}
	var updated example.Pod
	if err := d.store.GuaranteedUpdate(ctx, "/pods/ns/listed-0", &updated, false, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		out := in.(*example.Pod).DeepCopy()
		out.Spec.NodeName = "node-c"
		return out, nil, nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	d.converge(ctx, t)
	list := &example.PodList{}
	if err := d.store.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	d.sink.mu.Lock()
	defer d.sink.mu.Unlock()
	if len(list.Items) != len(d.sink.full) {
		t.Fatalf("store lists %d pods, the sink holds %d", len(list.Items), len(d.sink.full))
	}
	for i := range list.Items {
		want := &list.Items[i]
		got := d.sink.full[want.Name]
		if !apiequality.Semantic.DeepEqual(want, got) {
			t.Fatalf("pod %s: reflector decoded %#v, the store %#v", want.Name, got, want)
		}
	}
}

// TestDirectTransientErrorRewatches: a watch cancelled for a lost leader,
// or broken by the connection, is watched again from the sink's revision,
// with no relist.
func TestDirectTransientErrorRewatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp clientv3.WatchResponse
	}{
		{"no leader", clientv3.WatchResponse{Canceled: true, CancelReason: "etcdserver: no leader"}},
		{"unavailable", clientv3.WatchResponse{Canceled: true, CancelReason: "etcdserver: request timed out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d, _, first := followingDirect(ctx, t)
			first.send(t, tc.resp)
			d.nextWatch(t)
			d.create(ctx, t, "after-error")
			d.delete(ctx, t, "pod-0")
			d.converge(ctx, t)
			d.checkMonotonic(t)
			d.checkNoRelist(t, "a transient error")
		})
	}
}

// TestDirectProgressAnswers: a progress request goes to the reflector's
// own watch stream (the same metadata and require-leader flag as its
// watch), and its notification moves the sink to a revision written
// outside the resource.
func TestDirectProgressAnswers(t *testing.T) {
	ctx := context.Background()
	d, r, _ := followingDirect(ctx, t)
	resp, err := d.client.Put(ctx, "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	rev := uint64(resp.Header.Revision)
	// etcd drops a progress request while a watch on the stream is still
	// catching up (as a new one is, for its first ~100 ms); the cache's
	// driver asks again, and so does the test.
	deadline := time.Now().Add(30 * time.Second)
	for d.sink.RV() < rev {
		if time.Now().After(deadline) {
			t.Fatalf("sink at %d; no progress notification moved it to %d", d.sink.RV(), rev)
		}
		if err := r.RequestProgress(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-d.sink.changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestDirectStoredSizes: the reflector's object count and stored bytes
// follow etcd's values through the list, puts, updates and deletes.
func TestDirectStoredSizes(t *testing.T) {
	ctx := context.Background()
	d, r, _ := followingDirect(ctx, t)
	check := func(when string) {
		t.Helper()
		resp, err := d.client.Get(ctx, reflector.EtcdKey(etcd3testing.PathPrefix(), "/pods/"), clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		for _, kv := range resp.Kvs {
			want += int64(len(kv.Value))
		}
		n, bytes := r.StoredSizes()
		if n != int64(len(resp.Kvs)) || bytes != want {
			t.Fatalf("%s: %d objects of %d bytes, etcd has %d of %d", when, n, bytes, len(resp.Kvs), want)
		}
	}
	check("after the list")
	d.create(ctx, t, "new")
	d.putTxn(ctx, t, "pod-0", "other") // pod-0 rewritten, smaller or not
	d.delete(ctx, t, "pod-1")
	d.converge(ctx, t)
	check("after events")
}
