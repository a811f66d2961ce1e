package reflector_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/utils/clock"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// recordingSink is a map replayed from what the reflector hands it. It
// records every revision it was moved to, so the test can check that the
// reflector never goes back in time.
type recordingSink struct {
	mu       sync.Mutex
	objs     map[string]string // name -> resourceVersion
	rv       uint64
	rvs      []uint64
	replaces int
	reasons  []string
	// batches is the size of every Apply, in order; unready counts Unready.
	batches []int
	unready int
	changed chan struct{}
}

func newSink() *recordingSink {
	return &recordingSink{objs: map[string]string{}, changed: make(chan struct{}, 1)}
}

func (s *recordingSink) moved(rv uint64) {
	s.rv = rv
	s.rvs = append(s.rvs, rv)
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *recordingSink) Replace(objs []runtime.Object, rv uint64, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs = map[string]string{}
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		s.objs[m.GetName()] = m.GetResourceVersion()
	}
	s.replaces++
	s.reasons = append(s.reasons, reason)
	s.moved(rv)
	return nil
}

func (s *recordingSink) Apply(rv uint64, evs []reflector.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs {
		m, _ := meta.Accessor(e.Object)
		if e.Type == watch.Deleted {
			delete(s.objs, m.GetName())
		} else {
			s.objs[m.GetName()] = m.GetResourceVersion()
		}
	}
	s.batches = append(s.batches, len(evs))
	s.moved(rv)
	return nil
}

func (s *recordingSink) Unready(error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unready++
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *recordingSink) Progress(rv uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moved(rv)
}

func (s *recordingSink) RV() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// controlledStorage passes everything to the etcd3 store, but lets the test
// end the reflector's current watch and hold back its next Watch call.
type controlledStorage struct {
	storage.Interface
	watches chan *endableWatch
	// opened counts Watch calls that returned a watch.
	opened atomic.Int64
	mu     sync.Mutex
	hold   chan struct{} // non-nil: the next Watch waits for it to close
	// failAfter, when failWith is set, is how many data events every new
	// watch passes before it delivers failWith and ends.
	failAfter int
	failWith  *watch.Event
}

// failEveryWatch makes every watch opened from now on pass n data events,
// then deliver ev and end: an error that comes back at the same place
// each time the watch is opened again.
// A negative n stops it.
func (c *controlledStorage) failEveryWatch(n int, ev watch.Event) {
	c.mu.Lock()
	c.failAfter, c.failWith = n, &ev
	if n < 0 {
		c.failWith = nil
	}
	c.mu.Unlock()
}

func (c *controlledStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	hold := c.hold
	c.hold = nil
	budget, failWith := -1, c.failWith
	if failWith != nil {
		budget = c.failAfter
	}
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	inner, err := c.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	w := &endableWatch{inner: inner, out: make(chan watch.Event), end: make(chan struct{}), inject: make(chan watch.Event), budget: budget, failWith: failWith}
	c.opened.Add(1)
	go w.pump()
	if failWith != nil {
		// Nobody waits for these: they fail by themselves.
		return w, nil
	}
	select {
	case c.watches <- w:
	case <-ctx.Done():
		w.Stop()
		return nil, ctx.Err()
	}
	return w, nil
}

func (c *controlledStorage) holdNextWatch() chan struct{} {
	release := make(chan struct{})
	c.mu.Lock()
	c.hold = release
	c.mu.Unlock()
	return release
}

// endableWatch forwards an inner watch until the test ends it, as a broken
// gRPC stream would.
type endableWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	end      chan struct{}
	inject   chan watch.Event
	stopOnce sync.Once

	mu sync.Mutex
	// budget is how many more data events pass before the watch ends by
	// itself; negative means no limit.
	budget int
	// failWith, if set, is delivered when the budget runs out, before the
	// watch ends.
	failWith *watch.Event
}

// endAfter makes the watch end by itself after n more data events, as a
// stream that breaks in the middle of a transaction.
func (w *endableWatch) endAfter(n int) {
	w.mu.Lock()
	w.budget = n
	w.mu.Unlock()
}

// send delivers ev (e.g. an ERROR event) to the reflector, before anything
// etcd sends next.
func (w *endableWatch) send(t *testing.T, ev watch.Event) {
	t.Helper()
	select {
	case w.inject <- ev:
	case <-time.After(30 * time.Second):
		t.Fatal("the reflector did not take the injected event")
	}
}

func (w *endableWatch) pump() {
	defer close(w.out)
	defer w.inner.Stop()
	w.mu.Lock()
	failNow := w.budget == 0 && w.failWith != nil
	w.mu.Unlock()
	if failNow {
		select {
		case w.out <- *w.failWith:
		case <-w.end:
		}
		return
	}
	for {
		var ev watch.Event
		select {
		case <-w.end:
			return
		case ev = <-w.inject:
		case e, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			ev = e
			if ev.Type != watch.Bookmark {
				w.mu.Lock()
				if w.budget == 0 {
					failWith := w.failWith
					w.mu.Unlock()
					if failWith != nil {
						select {
						case w.out <- *failWith:
						case <-w.end:
						}
					}
					return
				}
				if w.budget > 0 {
					w.budget--
				}
				w.mu.Unlock()
			}
		}
		select {
		case w.out <- ev:
		case <-w.end:
			return
		}
	}
}

func (w *endableWatch) Stop()                          { w.stopOnce.Do(func() { close(w.end) }) }
func (w *endableWatch) ResultChan() <-chan watch.Event { return w.out }

type env struct {
	store   storage.Interface
	client  *clientv3.Client
	control *controlledStorage
	sink    *recordingSink
}

func start(t *testing.T) *env {
	t.Helper()
	return startWith(t, identity.NewEncryptCheckTransformer())
}

// startWith is start with tr as the store's value transformer.
func startWith(t *testing.T, tr value.Transformer) *env {
	t.Helper()
	server, _ := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	versioner := storage.APIObjectVersioner{}
	compactor := etcd3.NewCompactor(server.V3Client.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	codec := cachetest.ProtoCodec
	st, err := etcd3.New(server.V3Client, compactor, codec, cachetest.NewPod, cachetest.NewPodList,
		etcd3testing.PathPrefix(), "/pods/", schema.GroupResource{Resource: "pods"}, tr,
		etcd3.NewDefaultLeaseManagerConfig(), etcd3.NewDefaultDecoder(codec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return &env{
		store:   st,
		client:  server.V3Client.Client,
		control: &controlledStorage{Interface: st, watches: make(chan *endableWatch, 16)},
		sink:    newSink(),
	}
}

func (e *env) run(t *testing.T) { e.runWith(t, reflector.Config{}) }

// runWith starts a reflector over e with cfg's UntrustedProgress,
// TransientRetry and RevisionPending. Without a RevisionPending of
// the test's, a pending revision is answered with a progress request, as
// the cache's driver does.
func (e *env) runWith(t *testing.T, cfg reflector.Config) *reflector.Reflector {
	var r *reflector.Reflector
	cfg.Storage = e.control
	cfg.Versioner = storage.APIObjectVersioner{}
	cfg.Prefix = "/pods/"
	cfg.NewListFunc = cachetest.NewPodList
	cfg.Sink = e.sink
	cfg.PageSize = 2 // several pages, to exercise continue
	cfg.Name = "pods"
	progressCtx, cancelProgress := context.WithCancel(context.Background())
	t.Cleanup(cancelProgress)
	if cfg.RevisionPending == nil {
		cfg.RevisionPending = func(rv uint64) {
			go e.askProgress(progressCtx, func(ctx context.Context) error { return r.RequestProgress(ctx) }, rv)
		}
	}
	r = reflector.New(cfg)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); r.Run(stop) }()
	t.Cleanup(func() { close(stop); <-done })
	select {
	case <-r.Listed():
	case <-time.After(30 * time.Second):
		t.Fatalf("reflector did not list: %v", r.LastError())
	}
	return r
}

// askProgress asks for a progress notification until the sink reaches rv,
// every 100 ms, as the driver asks again once a request stalls: etcd
// drops a request that comes while a watch on the stream is unsynced, and
// one sent on a stream that is closing (after a failed watch) is lost.
func (e *env) askProgress(ctx context.Context, request func(context.Context) error, rv uint64) {
	for {
		_ = request(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		e.sink.mu.Lock()
		at := e.sink.rv
		e.sink.mu.Unlock()
		if at >= rv {
			return
		}
	}
}

func (e *env) create(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	p := &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if err := e.store.Create(ctx, "/pods/ns/"+name, p, &example.Pod{}, 0); err != nil {
		t.Fatal(err)
	}
}

// deleteTxn deletes the pods in one etcd transaction: one revision.
func (e *env) deleteTxn(ctx context.Context, t *testing.T, names ...string) {
	t.Helper()
	var ops []clientv3.Op
	for _, n := range names {
		ops = append(ops, clientv3.OpDelete(etcd3testing.PathPrefix()+"/pods/ns/"+n))
	}
	if _, err := e.client.Txn(ctx).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
}

func (e *env) delete(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if err := e.store.Delete(ctx, "/pods/ns/"+name, &example.Pod{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// etcdState lists etcd directly: the truth the sink must converge to.
func (e *env) etcdState(ctx context.Context, t *testing.T) (map[string]string, uint64) {
	t.Helper()
	list := &example.PodList{}
	if err := e.store.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.ResourceVersion
	}
	rv, _ := strconv.ParseUint(list.ResourceVersion, 10, 64)
	return out, rv
}

// converge waits until the sink holds exactly etcd's state at rv or later.
func (e *env) converge(ctx context.Context, t *testing.T) {
	t.Helper()
	want, rv := e.etcdState(ctx, t)
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		e.sink.mu.Lock()
		got := fmt.Sprint(sorted(e.sink.objs))
		at := e.sink.rv
		e.sink.mu.Unlock()
		if at >= rv && got == fmt.Sprint(sorted(want)) {
			return
		}
		select {
		case <-e.sink.changed:
		case <-deadline.C:
			t.Fatalf("sink at rv %d holds %s; etcd at %d holds %s", at, got, rv, fmt.Sprint(sorted(want)))
		}
	}
}

func (e *env) checkMonotonic(t *testing.T) {
	t.Helper()
	e.sink.mu.Lock()
	defer e.sink.mu.Unlock()
	for i := 1; i < len(e.sink.rvs); i++ {
		if e.sink.rvs[i] < e.sink.rvs[i-1] {
			t.Fatalf("sink went back in time: %v", e.sink.rvs)
		}
	}
}

func sorted(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"@"+v)
	}
	sort.Strings(out)
	return out
}

func nextWatch(t *testing.T, e *env) *endableWatch {
	t.Helper()
	select {
	case w := <-e.control.watches:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("the reflector did not open a watch")
		return nil
	}
}

// following starts a reflector over five pods and returns once it has
// listed them and follows etcd through its first watch.
func following(ctx context.Context, t *testing.T) (*env, *endableWatch) {
	t.Helper()
	e := start(t)
	for i := 0; i < 5; i++ {
		e.create(ctx, t, "pod-"+strconv.Itoa(i))
	}
	e.run(t)
	first := nextWatch(t, e)
	e.converge(ctx, t)
	return e, first
}

// downWhile ends the reflector's watch w and holds the next one back
// while writes run, as a watch stream that broke and came back after them.
func (e *env) downWhile(w *endableWatch, writes func()) {
	release := e.control.holdNextWatch()
	w.Stop()
	writes()
	close(release)
}

// TestResumeAfterWatchEnds: a watch that ends without an error is resumed
// from the sink's revision, without a relist, and nothing written
// meanwhile (a transaction included) is lost.
func TestResumeAfterWatchEnds(t *testing.T) {
	ctx := context.Background()
	e, first := following(ctx, t)
	e.downWhile(first, func() {
		e.create(ctx, t, "while-down")
		e.delete(ctx, t, "pod-0")
		e.putTxn(ctx, t, "x", "y")
	})
	nextWatch(t, e)
	e.converge(ctx, t)
	e.checkMonotonic(t)
	if replaces, _, _, _ := e.counts(); replaces != 1 {
		t.Fatalf("%d lists, want 1: a clean watch end must resume, not relist", replaces)
	}
}

// TestRelistAfterCompaction: the watch breaks, etcd compacts past the
// sink's revision before the watch resumes, so resuming fails with 410
// and the reflector must relist, marked compacted, converge on etcd's
// state, never go back, and keep following etcd after it.
func TestRelistAfterCompaction(t *testing.T) {
	ctx := context.Background()
	e, first := following(ctx, t)
	e.downWhile(first, func() {
		e.create(ctx, t, "while-down")
		e.delete(ctx, t, "pod-1")
		e.delete(ctx, t, "pod-2")
		_, rv := e.etcdState(ctx, t)
		if _, err := e.client.Compact(ctx, int64(rv)); err != nil {
			t.Fatal(err)
		}
	})
	e.converge(ctx, t)
	e.checkMonotonic(t)
	replaces, unready, reasons, _ := e.counts()
	if replaces < 2 || unready < 1 || reasons[1] != metrics.RelistCompacted {
		t.Fatalf("%d lists, %d unready, reasons %v; want a relist marked compacted", replaces, unready, reasons)
	}
	e.create(ctx, t, "after-relist")
	e.converge(ctx, t)
}

// checkNoRelist fails t unless the reflector listed only once and was
// never unready: what happened (after) was retried on the same history.
func (e *env) checkNoRelist(t *testing.T, after string) {
	t.Helper()
	if replaces, unready, reasons, _ := e.counts(); replaces != 1 || unready != 0 {
		t.Fatalf("%d lists (reasons %v) and %d unready after %s, want the first list only, never unready", replaces, reasons, unready, after)
	}
}

func (e *env) counts() (replaces, unready int, reasons []string, batches []int) {
	e.sink.mu.Lock()
	defer e.sink.mu.Unlock()
	return e.sink.replaces, e.sink.unready, append([]string(nil), e.sink.reasons...), append([]int(nil), e.sink.batches...)
}

// errorEvent is the watch ERROR event the etcd3 store sends for err.
func errorEvent(err *apierrors.StatusError) watch.Event {
	st := err.ErrStatus
	return watch.Event{Type: watch.Error, Object: &st}
}

func internalError() watch.Event {
	return errorEvent(apierrors.NewInternalError(errors.New("etcdserver: no leader")))
}

// TestTransientErrorRewatchesWithoutRelist: an etcd leader loss reaches the
// reflector as an internal-error watch event; an overloaded or unreachable
// etcd as 429, 503 or a timeout. Like upstream's cacher, it watches again
// from its revision: no relist, the sink stays ready, and nothing is lost.
func TestTransientErrorRewatchesWithoutRelist(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		ev   watch.Event
	}{
		{"internal error (no leader)", internalError()},
		{"429", errorEvent(apierrors.NewTooManyRequests("etcdserver: too many requests", 1))},
		{"503", errorEvent(apierrors.NewServiceUnavailable("etcdserver: unavailable"))},
		{"504 timeout", errorEvent(apierrors.NewTimeoutError("etcdserver: request timed out", 1))},
		{"server timeout", errorEvent(apierrors.NewServerTimeout(pods, "watch", 1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, first := following(ctx, t)
			first.send(t, tc.ev)
			second := nextWatch(t, e)
			e.create(ctx, t, "after-error")
			e.converge(ctx, t)
			second.send(t, tc.ev)
			nextWatch(t, e)
			e.delete(ctx, t, "pod-0")
			e.converge(ctx, t)
			e.checkMonotonic(t)
			e.checkNoRelist(t, "transient errors")
		})
	}
}

// TestTransientErrorsPastBudgetRelist: transient errors with no progress
// in between, for longer than the retry budget, end in a relist whose
// reason says so.
func TestTransientErrorsPastBudgetRelist(t *testing.T) {
	ctx := context.Background()
	e := start(t)
	e.create(ctx, t, "pod-0")
	e.runWith(t, reflector.Config{TransientRetry: time.Millisecond})
	first := nextWatch(t, e)
	e.converge(ctx, t)
	first.send(t, internalError())
	// The backoff (~100 ms) alone outlasts the 1 ms budget.
	nextWatch(t, e).send(t, internalError())
	e.waitSink(t, "a relist", func() bool { r, _, _, _ := e.counts(); return r == 2 })
	_, unready, reasons, _ := e.counts()
	if unready != 1 || reasons[1] != metrics.RelistRetryBudget {
		t.Fatalf("unready %d, reasons %v; want 1 and [initial retry_budget]", unready, reasons)
	}
	e.create(ctx, t, "after-relist")
	e.converge(ctx, t)
}

// breakInsideTxn ends first after the first event of a three-key
// transaction, lets the next watch deliver the rest, and returns the lists
// and the applies (events each) the sink saw once it caught up with etcd,
// never going back.
func breakInsideTxn(ctx context.Context, t *testing.T, e *env, first *endableWatch) (replaces int, batches []int) {
	t.Helper()
	first.endAfter(1)
	e.deleteTxn(ctx, t, "pod-1", "pod-2", "pod-3")
	nextWatch(t, e)
	e.converge(ctx, t)
	e.checkMonotonic(t)
	replaces, _, _, batches = e.counts()
	return replaces, batches
}

// TestTransactionSplitByBrokenWatch: the watch breaks after the first
// event of a three-key transaction. The sink never gets that part alone;
// the next watch delivers the whole transaction, in one Apply.
func TestTransactionSplitByBrokenWatch(t *testing.T) {
	ctx := context.Background()
	e, first := following(ctx, t)
	replaces, batches := breakInsideTxn(ctx, t, e, first)
	if replaces != 1 || len(batches) != 1 || batches[0] != 3 {
		t.Fatalf("%d lists, applies of %v events; want 1 list and one apply of the 3", replaces, batches)
	}
}

// TestUntrustedProgressSplitTransaction: with progress notifications
// untrusted, events go to the sink one at a time, as upstream's cacher
// applies them. A watch that breaks inside a transaction resumes from the
// revision before it and applies exactly the events the sink lacks.
func TestUntrustedProgressSplitTransaction(t *testing.T) {
	ctx := context.Background()
	e := start(t)
	for i := 0; i < 5; i++ {
		e.create(ctx, t, "pod-"+strconv.Itoa(i))
	}
	e.runWith(t, reflector.Config{UntrustedProgress: true})
	first := nextWatch(t, e)
	e.converge(ctx, t)
	replaces, batches := breakInsideTxn(ctx, t, e, first)
	if replaces != 1 || len(batches) != 3 {
		t.Fatalf("%d lists, applies %v; want 1 list and three single applies", replaces, batches)
	}
	for _, n := range batches {
		if n != 1 {
			t.Fatalf("applies %v: untrusted progress must hand events over one at a time", batches)
		}
	}
}

// waitSink waits until cond holds, re-checking whenever the sink changes.
func (e *env) waitSink(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-e.sink.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// putTxn puts the pods in one etcd transaction, as another etcd client
// could: the apiserver itself writes one key per transaction.
func (e *env) putTxn(ctx context.Context, t *testing.T, names ...string) uint64 {
	t.Helper()
	var ops []clientv3.Op
	for _, n := range names {
		data, err := runtime.Encode(cachetest.ProtoCodec, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns"}})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut(etcd3testing.PathPrefix()+"/pods/ns/"+n, string(data)))
	}
	resp, err := e.client.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		t.Fatal(err)
	}
	return uint64(resp.Header.Revision)
}
