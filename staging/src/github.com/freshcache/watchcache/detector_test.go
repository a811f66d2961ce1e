package watchcache_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/features"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// checkPeriod is the detector's period in these tests: short, so that
// rounds come quickly. Nothing asserts on it.
const checkPeriod = 50 * time.Millisecond

func off() *bool { b := false; return &b }

// divergent sits between the Gate and the cache. It drops the first watch
// event of the pod named drop, once and for good: the cache misses that
// change until it lists again, a real divergence from etcd. It also logs
// the cache's GetList calls, to show what the detector costs etcd.
type divergent struct {
	storage.Interface
	drop    string
	dropped atomic.Bool

	mu    sync.Mutex
	lists []storage.ListOptions
}

func (d *divergent) wrap(s storage.Interface) storage.Interface {
	d.Interface = s
	return d
}

func (d *divergent) GetList(ctx context.Context, key string, opts storage.ListOptions, out runtime.Object) error {
	d.mu.Lock()
	d.lists = append(d.lists, opts)
	d.mu.Unlock()
	return d.Interface.GetList(ctx, key, opts, out)
}

// listCalls returns the GetList calls logged so far.
func (d *divergent) listCalls() []storage.ListOptions {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]storage.ListOptions(nil), d.lists...)
}

func (d *divergent) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := d.Interface.Watch(ctx, key, opts)
	if err != nil || d.drop == "" {
		return w, err
	}
	return cachetest.FilterWatch(w, func(ev watch.Event) bool {
		p, ok := ev.Object.(*example.Pod)
		return !ok || p.Name != d.drop || !d.dropped.CompareAndSwap(false, true)
	}), nil
}

// detectorRecorder records the detector's rounds and the cache's relists.
type detectorRecorder struct {
	metrics.Discard
	mu      sync.Mutex
	results []string
	relists map[string]int
}

func newDetectorRecorder() *detectorRecorder {
	return &detectorRecorder{relists: map[string]int{}}
}

func (r *detectorRecorder) ConsistencyChecked(result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, result)
}

func (r *detectorRecorder) Relisted(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relists[reason]++
}

// rounds returns the results of the rounds so far, in order.
func (r *detectorRecorder) rounds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.results...)
}

func (r *detectorRecorder) count(result string) int {
	n := 0
	for _, res := range r.rounds() {
		if res == result {
			n++
		}
	}
	return n
}

func (r *detectorRecorder) relisted(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.relists[reason]
}

// detecting is the options of a cache whose detector runs every
// checkPeriod.
func detecting() watchcache.Options {
	return watchcache.Options{InconsistencyDetection: on(), InconsistencyCheckPeriod: checkPeriod}
}

// state maps every key to its resource version.
func state(l *example.PodList) map[string]string {
	out := map[string]string{}
	for i := range l.Items {
		out[cachetest.PodKey(&l.Items[i])] = l.Items[i].ResourceVersion
	}
	return out
}

// servesEtcdState reports whether the cache's rv=0 LIST (its newest
// snapshot) holds exactly what etcd holds now. A cache that is pending
// answers 429, which is not that.
func servesEtcdState(t *testing.T, e *cachetest.Env) bool {
	t.Helper()
	ctx := context.Background()
	fromCache, fromEtcd := &example.PodList{}, &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", listOpts("0"), fromCache); err != nil {
		return false
	}
	if err := e.Etcd.GetList(ctx, "/pods/", listOpts(""), fromEtcd); err != nil {
		t.Fatal(err)
	}
	return maps.Equal(state(fromCache), state(fromEtcd))
}

func createIn(t *testing.T, s storage.Interface, name string) *example.Pod {
	t.Helper()
	return create(t, s, "ns", name, "")
}

// TestInconsistencyDetectedAndHealed drops one watch event for good, so
// that the cache misses a pod that etcd holds. The detector must find it
// (one mismatch), purge the cache (the watcher open on it is closed) and
// relist (reason inconsistent), after which the cache serves etcd's state
// and the following rounds match.
func TestInconsistencyDetectedAndHealed(t *testing.T) {
	rec := newDetectorRecorder()
	div := &divergent{drop: "victim"}
	e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(detecting()), cachetest.WithStorageWrapper(div.wrap))
	ctx := context.Background()
	createIn(t, e.Etcd, "before")
	w, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	createIn(t, e.Etcd, "victim") // the cache never hears of it
	after := createIn(t, e.Etcd, "after")
	waitFor(t, "the cache to apply the write after the dropped one", func() bool {
		return e.Cache.RV() >= rvOf(t, after.ResourceVersion)
	})
	if !div.dropped.Load() {
		t.Fatal("the victim's event was not dropped")
	}

	waitFor(t, "the divergence to be detected and healed", func() bool {
		return rec.count(metrics.CheckMismatch) >= 1 &&
			rec.relisted(metrics.RelistInconsistent) >= 1 &&
			servesEtcdState(t, e)
	})
	// The watcher saw before and after, never victim, and was closed by
	// the purge: its client must re-watch.
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*example.Pod); ok && p.Name == "victim" {
			t.Fatalf("the watcher got %s of the dropped pod", ev.Type)
		}
	}
	// And the healed cache is consistent from then on.
	healed := len(rec.rounds())
	waitFor(t, "a round after the heal", func() bool { return rec.count(metrics.CheckMatch) > 0 && len(rec.rounds()) > healed })
	rounds := rec.rounds()
	if n := rec.count(metrics.CheckMismatch); n != 1 {
		t.Fatalf("%d mismatches (rounds %v), want exactly 1", n, rounds)
	}
	if n := rec.relisted(metrics.RelistInconsistent); n != 1 {
		t.Fatalf("%d relists for an inconsistency, want exactly 1", n)
	}
	for _, res := range rounds[healed:] {
		if res != metrics.CheckMatch && res != metrics.CheckSkipped {
			t.Fatalf("round after the heal: %s (rounds %v), want match", res, rounds)
		}
	}
}

// TestConsistencyChecksOnlyMatchOnAConsistentCache: while pods are
// created, updated and deleted, every round compares the cache with etcd
// at exactly the cache's revision, so a cache that applied every event
// never mismatches, however far etcd has moved on.
func TestConsistencyChecksOnlyMatchOnAConsistentCache(t *testing.T) {
	rec := newDetectorRecorder()
	e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(detecting()))
	ctx := context.Background()
	for i := 0; len(rec.rounds()) < 5; i++ {
		if i > 10000 {
			t.Fatalf("5 rounds not reported after %d writes", i)
		}
		p := createIn(t, e.Cache, fmt.Sprintf("p%04d", i))
		switch i % 3 {
		case 1:
			out := &example.Pod{}
			err := e.Cache.GuaranteedUpdate(ctx, cachetest.PodKey(p), out, false, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
				pod := in.(*example.Pod).DeepCopy()
				pod.Spec.NodeName = "n"
				return pod, nil, nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := e.Cache.Delete(ctx, cachetest.PodKey(p), &example.Pod{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, res := range rec.rounds() {
		if res != metrics.CheckMatch {
			t.Fatalf("round %d: %s (rounds %v), want only matches", i, res, rec.rounds())
		}
	}
	if n := rec.relisted(metrics.RelistInconsistent); n != 0 {
		t.Fatalf("%d relists for inconsistencies, want none", n)
	}
}

// TestConsistencyCheckCostPerPeriod shows the detector's etcd cost in a
// running cache: every round is exactly one paginated list of the
// resource (ceil(5/2) = 3 GetList calls: an Exact list at the snapshot's
// revision, then two continue tokens), and rounds never overlap.
func TestConsistencyCheckCostPerPeriod(t *testing.T) {
	writer := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{InconsistencyDetection: off()}))
	for i := 0; i < 5; i++ {
		createIn(t, writer.Etcd, fmt.Sprintf("p%d", i))
	}
	rec := newDetectorRecorder()
	div := &divergent{}
	o := detecting()
	o.ListPageSize = 2
	e := cachetest.StartOn(t, writer.Server.V3Client, cachetest.WithRecorder(rec), cachetest.WithOptions(o), cachetest.WithStorageWrapper(div.wrap))
	initial := len(div.listCalls()) // the reflector's list, before any round
	if initial != 3 {
		t.Fatalf("the initial list took %d pages, want 3", initial)
	}
	waitFor(t, "3 rounds", func() bool { return len(rec.rounds()) >= 3 })
	e.Cache.Stop() // no round runs after this; the calls are final
	calls := div.listCalls()[initial:]
	reported := rec.rounds()

	var rounds [][]storage.ListOptions
	for i, c := range calls {
		if c.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
			rounds = append(rounds, nil)
		} else if i == 0 {
			t.Fatalf("the first call after the initial list is %+v, not a round's Exact list", c)
		}
		rounds[len(rounds)-1] = append(rounds[len(rounds)-1], c)
	}
	complete := 0
	for i, r := range rounds {
		// Only the last round may be short: Stop cancelled it.
		cancelled := i == len(rounds)-1 && len(r) < 3
		if len(r) != 3 && !cancelled {
			t.Fatalf("round %d made %d GetList calls, want exactly 3 pages: %+v", i, len(r), r)
		}
		if len(r) == 3 {
			complete++
		}
		rv, err := strconv.ParseUint(r[0].ResourceVersion, 10, 64)
		if err != nil || rv == 0 {
			t.Fatalf("round %d listed at %q, want the snapshot's revision", i, r[0].ResourceVersion)
		}
		for j, c := range r {
			if c.Predicate.Limit != 2 || (j > 0 && (c.Predicate.Continue == "" || c.ResourceVersion != "")) {
				t.Fatalf("round %d call %d: %+v, want page %d of a limit-2 list", i, j, c, j+1)
			}
		}
	}
	// A round is reported after its last page; Stop may have cancelled the
	// report of the last complete one.
	if len(reported) != complete && len(reported) != complete-1 {
		t.Fatalf("%d rounds reported, %d complete rounds of calls", len(reported), complete)
	}
	for _, res := range reported {
		if res != metrics.CheckMatch {
			t.Fatalf("rounds %v, want only matches", reported)
		}
	}
}

// TestInconsistencyDetectionOff: with the gate off, or the option off, no
// detector runs: after many periods' worth of work, nothing was checked
// and etcd got no Exact list.
func TestInconsistencyDetectionOff(t *testing.T) {
	cases := []struct {
		name   string
		gate   bool
		option *bool
	}{
		{"gate off", false, nil},
		{"option off", true, off()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CacheInconsistencyDetection, tc.gate)
			rec := newDetectorRecorder()
			div := &divergent{drop: "victim"}
			e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithStorageWrapper(div.wrap), cachetest.WithOptions(watchcache.Options{
				InconsistencyDetection: tc.option, InconsistencyCheckPeriod: time.Microsecond,
			}))
			createIn(t, e.Etcd, "victim")
			var last *example.Pod
			for i := 0; i < 20; i++ {
				last = createIn(t, e.Etcd, fmt.Sprintf("p%d", i))
			}
			waitFor(t, "the cache to apply the writes", func() bool { return e.Cache.RV() >= rvOf(t, last.ResourceVersion) })
			// The divergence stays: nothing looks for it.
			l := &example.PodList{}
			if err := e.Cache.GetList(context.Background(), "/pods/", listOpts("0"), l); err != nil {
				t.Fatal(err)
			}
			if names(l)["victim"] || !div.dropped.Load() {
				t.Fatal("the cache holds the pod whose event was dropped")
			}
			e.Cache.Stop()
			if r := rec.rounds(); len(r) != 0 {
				t.Fatalf("rounds %v with the detector off", r)
			}
			for _, c := range div.listCalls() {
				if c.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
					t.Fatalf("an Exact list (%+v) with the detector off", c)
				}
			}
		})
	}
}

// TestConsistencyChecksCompleteRevisionsUnderUntrustedProgress: with the
// version guard tripped, events reach the cache one at a time, so the
// cache can hold part of a transaction. The detector must then compare
// the state before that revision, and match, instead of taking the half
// transaction for a divergence.
func TestConsistencyChecksCompleteRevisionsUnderUntrustedProgress(t *testing.T) {
	rec := newDetectorRecorder()
	e := cachetest.Start(t, cachetest.WithConsistentReadsDisabled(metrics.ReasonEtcdVersion),
		cachetest.WithRecorder(rec), cachetest.WithOptions(detecting()))
	a := createIn(t, e.Etcd, "a")
	waitFor(t, "the cache to see a", func() bool { return e.Cache.RV() >= rvOf(t, a.ResourceVersion) })

	e.Gate.Pause()
	e.Gate.Let(1) // the first event of the transaction, not the second
	rev := txn(t, e.Client,
		clientv3.OpPut(etcdKey("ns", "x"), encodePod(t, mkPod("ns", "x", ""))),
		clientv3.OpPut(etcdKey("ns", "y"), encodePod(t, mkPod("ns", "y", ""))))
	waitFor(t, "the cache to apply half the transaction", func() bool { return e.Cache.RV() == rev })
	if n := cachedCount(t, e.Cache); n != 2 {
		t.Fatalf("the cache holds %d pods, want a and x", n)
	}
	seen := len(rec.rounds())
	waitFor(t, "3 rounds on the half-applied transaction", func() bool { return len(rec.rounds()) >= seen+3 })
	e.Gate.Resume()
	for i, res := range rec.rounds() {
		if res != metrics.CheckMatch {
			t.Fatalf("round %d: %s (rounds %v), want only matches", i, res, rec.rounds())
		}
	}
	if n := rec.relisted(metrics.RelistInconsistent); n != 0 {
		t.Fatalf("%d relists for inconsistencies, want none", n)
	}
}
