package watchcache_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/freshness"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

func on() *bool { b := true; return &b }

// longWait is a timeout no healthy test reaches; it only bounds failures.
const longWait = 30 * time.Second

// waitFor polls cond until it holds or longWait passes. It paces a
// condition check, it does not wait for time to pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(longWait)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// startClusterWithLeader starts a 3-member etcd cluster and waits until a
// member leads; it returns the cluster and the indexes of the leader and of
// a follower.
func startClusterWithLeader(t *testing.T) (cl *cachetest.Cluster, leader, follower int) {
	t.Helper()
	cl = cachetest.StartCluster(t)
	waitFor(t, "a leader", func() bool {
		leader, follower = cl.Roles()
		return leader >= 0 && follower >= 0
	})
	return cl, leader, follower
}

// waiting reports whether n reads wait in the cache's freshness protocol.
func waiting(c *watchcache.Cache, n int) func() bool {
	return func() bool {
		s := c.FreshnessStatus()
		return s.Pending+s.Covered+s.Waiting >= n
	}
}

func create(t *testing.T, c storage.Interface, ns, name, node string) *example.Pod {
	t.Helper()
	p := mkPod(ns, name, node)
	out := &example.Pod{}
	if err := c.Create(context.Background(), cachetest.PodKey(p), p, out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

func rvOf(t *testing.T, s string) uint64 {
	t.Helper()
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func names(l *example.PodList) map[string]bool {
	out := map[string]bool{}
	for _, p := range l.Items {
		out[p.Name] = true
	}
	return out
}

// recorder counts the cache's read metrics.
type recorder struct {
	metrics.Discard
	mu       sync.Mutex
	reads    map[string]int // verb/requested/outcome
	progress int
	stalls   int
	advances int // AdvancedByOwnWrites
	disabled []string
	// waits and releases are the observed durations, by verb/requested.
	waits, releases map[string][]time.Duration
}

func newRecorder() *recorder {
	return &recorder{reads: map[string]int{}, waits: map[string][]time.Duration{}, releases: map[string][]time.Duration{}}
}

func (r *recorder) ReadWait(verb, requested string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits[verb+"/"+requested] = append(r.waits[verb+"/"+requested], d)
}

func (r *recorder) ReadReleased(verb, requested string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releases[verb+"/"+requested] = append(r.releases[verb+"/"+requested], d)
}

// durations returns copies of the waits and releases observed for
// verb/requested.
func (r *recorder) durations(k string) (waits, releases []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits[k]...), append([]time.Duration(nil), r.releases[k]...)
}

func (r *recorder) Read(verb, requested, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads[verb+"/"+requested+"/"+outcome]++
}

// ReadWaitExtended counts under "extended/<verb>/<requested>".
func (r *recorder) ReadWaitExtended(verb, requested string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads["extended/"+verb+"/"+requested]++
}

func (r *recorder) ProgressRequest() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress++
}

func (r *recorder) AdvancedByOwnWrites() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advances++
}

func (r *recorder) ProgressStalled() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stalls++
}

// counts is the progress requests and stalls recorded so far.
func (r *recorder) counts() (progress, stalls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progress, r.stalls
}

func (r *recorder) ConsistentReadsDisabled(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disabled = append(r.disabled, reason)
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads[key]
}

var everything = storage.ListOptions{Recursive: true, Predicate: storage.Everything}

func listOpts(rv string) storage.ListOptions {
	o := everything
	o.ResourceVersion = rv
	return o
}

// TestConsistentReadsSeeAcknowledgedWrite holds the cache's watch back,
// acknowledges a write, and checks that consistent LIST, GET and WATCH
// wait for it instead of answering from the stale cache, and then see it.
func TestConsistentReadsSeeAcknowledgedWrite(t *testing.T) {
	rec := newRecorder()
	e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(), ConsistentReadTimeout: longWait,
	}))
	ctx := context.Background()
	create(t, e.Cache, "ns", "a", "n1")

	e.Gate.Pause()
	b := create(t, e.Etcd, "ns", "b", "n1") // acknowledged; the cache cannot see it yet
	if e.Cache.RV() >= rvOf(t, b.ResourceVersion) {
		t.Fatalf("the cache saw the write through a paused watch")
	}

	type result struct {
		list  *example.PodList
		get   *example.Pod
		watch []watch.Event
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.list = &example.PodList{}
		if r.err = e.Cache.GetList(ctx, "/pods/", listOpts(""), r.list); r.err != nil {
			done <- r
			return
		}
		r.get = &example.Pod{}
		if r.err = e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{}, r.get); r.err != nil {
			done <- r
			return
		}
		w, err := e.Cache.Watch(ctx, "/pods/", listOpts(""))
		if r.err = err; err != nil {
			done <- r
			return
		}
		defer w.Stop()
		for len(r.watch) < 2 {
			r.watch = append(r.watch, <-w.ResultChan())
		}
		done <- r
	}()
	waitFor(t, "the consistent LIST to wait", waiting(e.Cache, 1))
	select {
	case r := <-done:
		t.Fatalf("consistent LIST answered while the cache was held back: %+v", r)
	default:
	}
	e.Gate.Resume()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := names(r.list); !got["a"] || !got["b"] {
		t.Errorf("consistent LIST = %v, want a and b", got)
	}
	if rvOf(t, r.list.ResourceVersion) < rvOf(t, b.ResourceVersion) {
		t.Errorf("LIST RV %s older than the write at %s", r.list.ResourceVersion, b.ResourceVersion)
	}
	if r.get.Name != "b" {
		t.Errorf("consistent GET = %+v", r.get)
	}
	seen := map[string]bool{}
	for _, ev := range r.watch {
		if ev.Type == watch.Added {
			m, err := meta.Accessor(ev.Object) // events carry a fanout.Shared
			if err != nil {
				t.Fatalf("watch event object %T: %v", ev.Object, err)
			}
			seen[m.GetName()] = true
		}
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("WATCH rv=\"\" initial events %v, want ADDED a and b", r.watch)
	}
	// None of them went to etcd for data.
	for _, k := range []string{"list/consistent/cache", "get/consistent/cache", "watch/consistent/cache"} {
		if rec.count(k) != 1 {
			t.Errorf("reads_total{%s} = %d, want 1", k, rec.count(k))
		}
	}
	// Each read's wait and its part until release were observed once; the
	// release cannot come after the reader ran again, nor before a revision
	// fetch issued after the read arrived had answered.
	for _, k := range []string{"list/consistent", "get/consistent", "watch/consistent"} {
		waits, releases := rec.durations(k)
		if len(waits) != 1 || len(releases) != 1 {
			t.Errorf("%s: %d waits and %d releases observed, want 1 and 1", k, len(waits), len(releases))
			continue
		}
		if releases[0] <= 0 || releases[0] > waits[0] {
			t.Errorf("%s: released after %v of a %v wait", k, releases[0], waits[0])
		}
	}
}

// TestConsistentListAfterOtherResourcesWrites: writes outside the resource
// move etcd's revision; a consistent LIST answers at that revision, from
// the cache, after a progress notification.
func TestConsistentListAfterOtherResourcesWrites(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on()}))
	ctx := context.Background()
	create(t, e.Cache, "ns", "a", "")
	var want int64
	for range 3 {
		want = e.IncreaseRV(ctx, t)
	}
	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", listOpts(""), list); err != nil {
		t.Fatal(err)
	}
	if got := rvOf(t, list.ResourceVersion); got != uint64(want) {
		t.Fatalf("consistent LIST at %d, etcd at %d", got, want)
	}
}

// TestFreshResourceVersionZero: with the gate and no staleness bound, rv=0
// waits like rv=""; without the gate, rv=0 is served from the cache as it
// is. (The bound, the default, has its own tests: bounded_test.go.)
func TestFreshResourceVersionZero(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("FreshResourceVersionZero=%v", gate), func(t *testing.T) {
			g := gate
			e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{
				FreshResourceVersionZero: &g, ConsistentReadTimeout: longWait, ZeroReadStaleness: -1,
			}))
			ctx := context.Background()
			create(t, e.Cache, "ns", "a", "")
			e.Gate.Pause()
			create(t, e.Etcd, "ns", "b", "")

			if !gate {
				list := &example.PodList{}
				if err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), list); err != nil {
					t.Fatal(err)
				}
				if names(list)["b"] {
					t.Fatal("rv=0 without the gate saw a write the paused cache cannot have")
				}
				if err := e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{ResourceVersion: "0"}, &example.Pod{}); !storage.IsNotFound(err) {
					t.Fatalf("GET rv=0 without the gate: %v, want NotFound from the cache", err)
				}
				return
			}
			done := make(chan error, 1)
			list := &example.PodList{}
			got := &example.Pod{}
			go func() {
				if err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), list); err != nil {
					done <- err
					return
				}
				done <- e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{ResourceVersion: "0"}, got)
			}()
			waitFor(t, "rv=0 LIST to wait", waiting(e.Cache, 1))
			e.Gate.Resume()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !names(list)["b"] || got.Name != "b" {
				t.Fatalf("fresh rv=0: list %v, get %q", names(list), got.Name)
			}
		})
	}
}

// TestNotOlderThanWaits: rv=N NotOlderThan waits for the cache to reach N
// through the same machinery, and says "too large" when it does not.
func TestNotOlderThanWaits(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadTimeout: longWait}))
	ctx := context.Background()
	e.Gate.Pause()
	b := create(t, e.Etcd, "ns", "b", "")
	done := make(chan error, 1)
	got := &example.Pod{}
	go func() {
		done <- e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{ResourceVersion: b.ResourceVersion}, got)
	}()
	waitFor(t, "NotOlderThan GET to wait", waiting(e.Cache, 1))
	e.Gate.Resume()
	if err := <-done; err != nil || got.Name != "b" {
		t.Fatalf("GET rv=%s: %v %q", b.ResourceVersion, err, got.Name)
	}

	short := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadTimeout: 50 * time.Millisecond}))
	short.Gate.Pause()
	c := create(t, short.Etcd, "ns", "c", "")
	opts := listOpts(c.ResourceVersion)
	opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	if err := short.Cache.GetList(ctx, "/pods/", opts, &example.PodList{}); !storage.IsTooLargeResourceVersion(err) {
		t.Fatalf("NotOlderThan on a held-back cache: %v, want TooLargeResourceVersion", err)
	}
}

// countingSource wraps a RevisionSource and can hold back fetches, so that
// a test decides when the first fetch ends.
type countingSource struct {
	inner   watchcache.RevisionSource
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (s *countingSource) RevisionFor(ctx context.Context, reads int) (int64, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	select {
	case <-s.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.inner.RevisionFor(ctx, reads)
}

// RecentRevision answers nothing: every read of these tests fetches.
func (s *countingSource) RecentRevision(time.Duration) (int64, bool) { return 0, false }

type fetchCounter struct {
	mu             sync.Mutex
	fetches, reads int
}

func (f *fetchCounter) FetchDone(reads int, _ time.Duration, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches++
	f.reads += reads
}

func (f *fetchCounter) WriteAnswered(int) {}
func (f *fetchCounter) HoldEnded(string)  {}

// TestCoalescing: N concurrent consistent reads across two resources that
// share one oracle cost a handful of revision fetches, not N. The first
// fetch of each cache is held until every read waits, which makes the
// count deterministic: each cache issues one fetch for its first read and
// one for all the others; the oracle may merge those further.
func TestCoalescing(t *testing.T) {
	counter := &fetchCounter{}
	first := cachetest.Start(t)
	o, err := oracle.New(first.Client, oracle.Options{Recorder: counter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	release := make(chan struct{})
	src := &countingSource{inner: o, release: release}
	opts := cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), ConsistentReadTimeout: longWait})
	pods := cachetest.StartOn(t, first.Server.V3Client, opts, cachetest.WithSource(src))
	leases := cachetest.StartOn(t, first.Server.V3Client, opts, cachetest.WithSource(src), cachetest.WithPrefix("/leases/", "leases"))
	ctx := context.Background()
	create(t, pods.Cache, "ns", "p", "")

	const n = 32
	errs := make(chan error, n)
	for i := range n {
		go func() {
			if i%2 == 0 {
				errs <- pods.Cache.GetList(ctx, "/pods/", listOpts(""), &example.PodList{})
			} else {
				errs <- leases.Cache.Get(ctx, "/leases/ns/x", storage.GetOptions{IgnoreNotFound: true}, &example.Pod{})
			}
		}()
	}
	waitFor(t, "every read to wait", func() bool {
		return waiting(pods.Cache, n/2)() && waiting(leases.Cache, n/2)()
	})
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	t.Logf("%d consistent reads on 2 resources: %d driver fetches, %d oracle fetches answering %d reads", n, src.calls, counter.fetches, counter.reads)
	if src.calls > 4 || counter.fetches > 4 {
		t.Fatalf("%d reads caused %d driver fetches and %d oracle fetches, want <= 4", n, src.calls, counter.fetches)
	}
	if counter.reads != n {
		t.Fatalf("oracle fetches answered %d reads, want %d", counter.reads, n)
	}
}

// TestProgressRequestSentAtOnce runs the cache on a fake clock that never
// moves: a consistent read that needs a progress notification still
// completes, with exactly one progress request. No tick is involved.
func TestProgressRequestSentAtOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	rec := newRecorder()
	e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(), Clock: clk,
	}))
	ctx := context.Background()
	a := create(t, e.Cache, "ns", "a", "")
	// The event came through the watch: the cache's watch stream is up, so
	// a progress request cannot be lost to a stream that has no watch yet
	// (the stall retry would cover that, but it runs on the stopped clock).
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })
	before := e.Gate.ProgressRequests()
	rec.mu.Lock()
	recBefore := rec.progress
	rec.mu.Unlock()
	want := e.IncreaseRV(ctx, t) // the cache's resource did not change
	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", listOpts(""), list); err != nil {
		t.Fatal(err)
	}
	if got := rvOf(t, list.ResourceVersion); got < uint64(want) {
		t.Fatalf("LIST at %d, want >= %d", got, want)
	}
	if n := e.Gate.ProgressRequests() - before; n != 1 {
		t.Fatalf("%d progress requests for one wait, want exactly 1", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := rec.progress - recBefore; n != 1 {
		t.Fatalf("progress_requests_total grew by %d, want 1", n)
	}
}

// droppingProgress loses the next drop progress requests, as etcd drops
// one while a watch on the stream is catching up.
type droppingProgress struct {
	storage.Interface
	drop atomic.Int32
}

func (d *droppingProgress) RequestWatchProgress(ctx context.Context) error {
	if d.drop.Add(-1) >= 0 {
		return nil
	}
	return d.Interface.RequestWatchProgress(ctx)
}

// TestProgressStallCounted: a progress request that nothing answers is
// declared lost after the stall time, counted in progress_stalls_total,
// and followed by another, which releases the read.
func TestProgressStallCounted(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	rec := newRecorder()
	dp := &droppingProgress{}
	e := cachetest.Start(t, cachetest.WithRecorder(rec),
		cachetest.WithStorageWrapper(func(s storage.Interface) storage.Interface { dp.Interface = s; return dp }),
		cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), Clock: clk}))
	ctx := context.Background()
	a := create(t, e.Cache, "ns", "a", "")
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })
	sent, stalls := rec.counts()
	dp.drop.Store(1)
	want := e.IncreaseRV(ctx, t)
	done := make(chan error, 1)
	list := &example.PodList{}
	go func() { done <- e.Cache.GetList(ctx, "/pods/", listOpts(""), list) }()
	waitFor(t, "a progress request", func() bool { p, _ := rec.counts(); return p > sent })
	if _, s := rec.counts(); s != stalls {
		t.Fatalf("%d stalls before the stall time passed", s-stalls)
	}
	clk.Step(freshness.DefaultProgressStall)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := rvOf(t, list.ResourceVersion); got < uint64(want) {
		t.Fatalf("LIST at %d, want >= %d", got, want)
	}
	p, s := rec.counts()
	if s-stalls != 1 || p-sent != 2 {
		t.Fatalf("%d stalls and %d progress requests, want the lost one counted and one more sent", s-stalls, p-sent)
	}
}

// TestCancelEndsWait: a cancelled client ends its wait at once and leaves
// no goroutine behind. LIST and GET return the context's error; a WATCH
// gets it as an ERROR event with 500 InternalError, as upstream's watch
// does when its context ends while it reads etcd's revision.
func TestCancelEndsWait(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), ConsistentReadTimeout: longWait}))
	create(t, e.Cache, "ns", "a", "")
	// Warm up: the watch stream and the oracle exist before the baseline.
	if err := e.Cache.GetList(context.Background(), "/pods/", listOpts(""), &example.PodList{}); err != nil {
		t.Fatal(err)
	}
	e.Gate.Pause()
	create(t, e.Etcd, "ns", "b", "")
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		verb string
		err  error
	}
	done := make(chan result, 3)
	go func() { done <- result{"LIST", e.Cache.GetList(ctx, "/pods/", listOpts(""), &example.PodList{})} }()
	go func() { done <- result{"GET", e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{}, &example.Pod{})} }()
	go func() {
		w, err := e.Cache.Watch(ctx, "/pods/", listOpts(""))
		if err == nil {
			ev := <-w.ResultChan()
			w.Stop()
			if ev.Type == watch.Error {
				err = apierrors.FromObject(ev.Object)
			}
		}
		done <- result{"WATCH", err}
	}()
	waitFor(t, "three waiting reads", waiting(e.Cache, 3))
	cancel()
	for range 3 {
		r := <-done
		switch {
		case r.err == nil:
			t.Fatalf("a cancelled %s succeeded from a held-back cache", r.verb)
		case r.verb == "WATCH":
			if !apierrors.IsInternalError(r.err) || !strings.Contains(r.err.Error(), context.Canceled.Error()) {
				t.Errorf("cancelled WATCH: %v (%s), want 500 InternalError with the context's error", r.err, apierrors.ReasonForError(r.err))
			}
		case !errors.Is(r.err, context.Canceled):
			t.Errorf("cancelled %s: %v, want context.Canceled", r.verb, r.err)
		}
	}
	waitFor(t, "no waiting reads", func() bool {
		s := e.Cache.FreshnessStatus()
		return s.Pending+s.Covered+s.Waiting == 0
	})
	e.Gate.Resume()
	if err := goleak.Find(ignore, goleak.IgnoreAnyFunction("github.com/freshcache/watchcache.(*driver).fetch"), otherTestsClients); err != nil {
		// A fetch in flight finishes on its own; everything else is gone.
		t.Fatal(err)
	}
}

// TestVersionGuardDelegates: a cache told that etcd's progress
// notifications cannot be trusted delegates consistent LISTs to etcd and
// says so in a metric. A consistent WATCH is not opened on etcd: it starts
// from the cache's current state, as upstream's watch rv="" does.
func TestVersionGuardDelegates(t *testing.T) {
	rec := newRecorder()
	e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithConsistentReadsDisabled(metrics.ReasonEtcdVersion),
		cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on(), FreshResourceVersionZero: on(), ConsistentReadTimeout: longWait}))
	a := create(t, e.Cache, "ns", "a", "")
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })
	e.Gate.Pause()
	create(t, e.Etcd, "ns", "b", "")
	list := &example.PodList{}
	if err := e.Cache.GetList(context.Background(), "/pods/", listOpts(""), list); err != nil || !names(list)["b"] {
		t.Fatalf("delegated consistent LIST: %v %v", err, names(list))
	}
	etcdWatches := e.Gate.Watches()
	for _, rv := range []string{"", "0"} {
		w, err := e.Cache.Watch(context.Background(), "/pods/", listOpts(rv))
		if err != nil {
			t.Fatalf("WATCH rv=%q: %v", rv, err)
		}
		select {
		case ev := <-w.ResultChan():
			// The cache's state: a, without b, which only etcd has.
			m, err := meta.Accessor(ev.Object)
			if ev.Type != watch.Added || err != nil || m.GetName() != "a" {
				t.Errorf("WATCH rv=%q: first event %s %v (%v), want ADDED a from the cache", rv, ev.Type, ev.Object, err)
			}
		case <-time.After(longWait):
			t.Errorf("WATCH rv=%q: no initial event", rv)
		}
		w.Stop()
	}
	if n := e.Gate.Watches() - etcdWatches; n != 0 {
		t.Fatalf("%d watches opened on etcd for clients, want none", n)
	}
	if s := e.Cache.FreshnessStatus(); s.Fetch != 0 {
		t.Fatalf("a disabled cache fetched revisions: %+v", s)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.disabled) != 1 || rec.disabled[0] != metrics.ReasonEtcdVersion {
		t.Fatalf("consistent_reads_disabled = %v", rec.disabled)
	}
	if rec.reads["list/consistent/fallback"] != 1 {
		t.Fatalf("reads_total = %v", rec.reads)
	}
}

// TestKeysWaitAsUpstream: the size estimator's key listing waits for the
// cache to reach etcd's revision for 3s, on the cache's clock, as
// upstream's cacher does, whatever ConsistentReadTimeout says, and then
// answers TooLargeResourceVersion.
func TestKeysWaitAsUpstream(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{Clock: clk, ConsistentReadTimeout: time.Hour}))
	a := create(t, e.Cache, "ns", "a", "")
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })
	if keys, err := e.Cache.Keys(context.Background()); err != nil || len(keys) != 1 {
		t.Fatalf("keys of a fresh cache: %v %v", keys, err)
	}
	e.Gate.Pause()
	create(t, e.Etcd, "ns", "b", "") // the cache cannot reach etcd's revision
	done := make(chan error, 1)
	go func() {
		_, err := e.Cache.Keys(context.Background())
		done <- err
	}()
	waitFor(t, "keys to wait", waiting(e.Cache, 1))
	clk.Step(3 * time.Second)
	select {
	case err := <-done:
		if !storage.IsTooLargeResourceVersion(err) {
			t.Fatalf("keys after 3s: %v, want TooLargeResourceVersion", err)
		}
	case <-time.After(longWait):
		t.Fatal("keys still waiting 3s after the cache fell behind")
	}
}

// TestGatesOffListStaysConsistent: with both gates off, LIST
// rv="" still waits for an acknowledged write the cache has not seen and is
// served from the cache (upstream's GA consistent list), while GET rv=""
// goes to etcd, as upstream's does.
func TestGatesOffListStaysConsistent(t *testing.T) {
	rec := newRecorder()
	e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: off(), FreshResourceVersionZero: off(), ConsistentReadTimeout: longWait,
	}))
	ctx := context.Background()
	create(t, e.Cache, "ns", "a", "n1")

	e.Gate.Pause()
	b := create(t, e.Etcd, "ns", "b", "n1") // acknowledged; the cache cannot see it yet
	got := &example.Pod{}
	if err := e.Cache.Get(ctx, "/pods/ns/b", storage.GetOptions{}, got); err != nil || got.Name != "b" {
		t.Fatalf("GET rv=\"\" with the gate off = %+v, %v; want b from etcd", got, err)
	}
	done := make(chan error, 1)
	list := &example.PodList{}
	go func() { done <- e.Cache.GetList(ctx, "/pods/", listOpts(""), list) }()
	waitFor(t, "the LIST to wait", waiting(e.Cache, 1))
	e.Gate.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := names(list); !n["a"] || !n["b"] {
		t.Errorf("LIST rv=\"\" with the gate off = %v, want a and b", n)
	}
	if rvOf(t, list.ResourceVersion) < rvOf(t, b.ResourceVersion) {
		t.Errorf("LIST RV %s older than the write at %s", list.ResourceVersion, b.ResourceVersion)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.reads["list/consistent/cache"] != 1 {
		t.Errorf("reads %v: want the LIST counted as a consistent read served from the cache", rec.reads)
	}
}
