package watchcache_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

func mkPod(ns, name, node string) *example.Pod {
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: example.PodSpec{NodeName: node}}
}

func TestBadInputGetsKubernetesErrors(t *testing.T) {
	e := cachetest.Start(t)
	ctx := context.Background()
	list := &example.PodList{}
	cases := []struct {
		name  string
		key   string
		opts  storage.ListOptions
		check func(error) bool
	}{
		{"malformed rv", "/pods/", storage.ListOptions{ResourceVersion: "x1", Recursive: true, Predicate: storage.Everything}, apierrors.IsBadRequest},
		{"malformed continue", "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: 1, Continue: "%%%"}}, apierrors.IsBadRequest},
		{"negative limit", "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: -1}}, apierrors.IsBadRequest},
		{"unknown match", "/pods/", storage.ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Sometimes", Recursive: true, Predicate: storage.Everything}, apierrors.IsBadRequest},
		{"key outside prefix", "/secrets/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, func(err error) bool { return err != nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Cache.GetList(ctx, tc.key, tc.opts, list); !tc.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
	if _, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: "zz", Recursive: true, Predicate: storage.Everything}); err == nil {
		t.Fatal("watch with malformed rv succeeded")
	}
}

// TestListAtRVZeroIgnoresLimit: a LIST at rv=0 answers in one piece
// whatever its limit, as upstream's cacher does (kubernetes#108003), with
// and without FreshResourceVersionZero, for resourceVersionMatch "" and
// NotOlderThan, and also when a fresh rv=0 read falls back to etcd.
// client-go's reflector takes a paginated rv=0 answer to mean "no watch
// cache" and pages every later relist, which then reaches etcd. A LIST at
// rv="" or rv=N keeps its pages.
func TestListAtRVZeroIgnoresLimit(t *testing.T) {
	limited := func(rv string, match metav1.ResourceVersionMatch, limit int64) storage.ListOptions {
		pred := storage.Everything
		pred.Limit = limit
		return storage.ListOptions{ResourceVersion: rv, ResourceVersionMatch: match, Recursive: true, Predicate: pred}
	}
	for _, zero := range []bool{false, true} {
		t.Run(fmt.Sprintf("FreshResourceVersionZero=%v", zero), func(t *testing.T) {
			z := zero
			e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{FreshResourceVersionZero: &z}))
			ctx := context.Background()
			var last string
			for i := 0; i < 5; i++ {
				last = create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), "").ResourceVersion
			}
			// The cache has every pod before rv=0 (gate off) reads it.
			if err := e.Cache.GetList(ctx, "/pods/", limited(last, metav1.ResourceVersionMatchNotOlderThan, 0), &example.PodList{}); err != nil {
				t.Fatal(err)
			}
			for _, match := range []metav1.ResourceVersionMatch{"", metav1.ResourceVersionMatchNotOlderThan} {
				list := &example.PodList{}
				if err := e.Cache.GetList(ctx, "/pods/", limited("0", match, 2), list); err != nil {
					t.Fatalf("rv=0 match=%q limit=2: %v", match, err)
				}
				if len(list.Items) != 5 || list.Continue != "" || list.RemainingItemCount != nil {
					t.Errorf("rv=0 match=%q limit=2: %d items, continue %q, remaining %v; want all 5 in one piece",
						match, len(list.Items), list.Continue, list.RemainingItemCount)
				}
			}
			// The limit still pages the other reads.
			for _, rv := range []string{"", last} {
				list := &example.PodList{}
				if err := e.Cache.GetList(ctx, "/pods/", limited(rv, "", 2), list); err != nil {
					t.Fatalf("rv=%q limit=2: %v", rv, err)
				}
				if len(list.Items) != 2 || list.Continue == "" {
					t.Errorf("rv=%q limit=2: %d items, continue %q; want a page of 2", rv, len(list.Items), list.Continue)
				}
			}
		})
	}
	// A fresh rv=0 read that the version guard sends to etcd: the answer is
	// etcd's, and still in one piece. (One that times out gets 429:
	// TestTimeoutActions.)
	t.Run("delegated to etcd", func(t *testing.T) {
		e := cachetest.Start(t, cachetest.WithConsistentReadsDisabled(metrics.ReasonEtcdVersion), cachetest.WithOptions(watchcache.Options{
			FreshResourceVersionZero: on(), ConsistentReadTimeout: longWait,
		}))
		for i := 0; i < 4; i++ {
			create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), "")
		}
		e.Gate.Pause()
		create(t, e.Etcd, "ns", "p4", "") // only etcd can answer with it
		list := &example.PodList{}
		if err := e.Cache.GetList(context.Background(), "/pods/", limited("0", "", 2), list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 5 || list.Continue != "" || !names(list)["p4"] {
			t.Errorf("rv=0 limit=2 served by etcd: %v, continue %q; want all 5 in one piece", names(list), list.Continue)
		}
	})
	// Upstream's cacher, for the record: the same answer.
	t.Run("upstream", func(t *testing.T) {
		e := cachetest.Start(t)
		up := startUpstream(t, e.Server.V3Client)
		var last string
		for i := 0; i < 5; i++ {
			last = create(t, e.Etcd, "ns", fmt.Sprintf("p%d", i), "").ResourceVersion
		}
		ctx, cancel := context.WithTimeout(context.Background(), upstreamReadTimeout)
		defer cancel()
		if err := up.GetList(ctx, "/pods/", limited(last, metav1.ResourceVersionMatchNotOlderThan, 0), &example.PodList{}); err != nil {
			t.Fatal(err)
		}
		for _, match := range []metav1.ResourceVersionMatch{"", metav1.ResourceVersionMatchNotOlderThan} {
			list := &example.PodList{}
			if err := up.GetList(ctx, "/pods/", limited("0", match, 2), list); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 5 || list.Continue != "" {
				t.Errorf("upstream rv=0 match=%q limit=2: %d items, continue %q", match, len(list.Items), list.Continue)
			}
		}
	})
}

func TestIndexUsedForFieldSelector(t *testing.T) {
	e := cachetest.Start(t, cachetest.NodeNameAndNamespaceIndex)
	ctx := context.Background()
	var last string
	for i := 0; i < 5; i++ {
		out := &example.Pod{}
		p := mkPod("ns", fmt.Sprintf("p%d", i), fmt.Sprintf("node%d", i%2))
		if err := e.Cache.Create(ctx, cachetest.PodKey(p), p, out, 0); err != nil {
			t.Fatal(err)
		}
		last = out.ResourceVersion
	}
	// Make sure the cache has everything, then list at rv=0 by node.
	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: last, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	byNode := storage.SelectionPredicate{
		Label:       storage.Everything.Label,
		Field:       mustField(t, "spec.nodeName=node1"),
		GetAttrs:    cachetest.PodAttrs,
		IndexFields: []string{"spec.nodeName"},
	}
	if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: byNode}, list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"p1", "p3"}) {
		t.Fatalf("by node1: %v", names)
	}
}

// TestNoLeaksOnCancel checks that cancelled contexts end watches and waits:
// no goroutine started for them survives.
func TestNoLeaksOnCancel(t *testing.T) {
	e := cachetest.Start(t)
	// The cache's etcd watch stream starts after readiness; make sure it
	// runs (an event went through it) before taking the baseline.
	out := &example.Pod{}
	if err := e.Cache.Create(context.Background(), "/pods/ns/seed", mkPod("ns", "seed", ""), out, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.Cache.Get(context.Background(), "/pods/ns/seed", storage.GetOptions{ResourceVersion: out.ResourceVersion}, &example.Pod{}); err != nil {
		t.Fatal(err)
	}
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	var ws []watch.Interface
	for i := 0; i < 10; i++ {
		w, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	waitErr := make(chan error, 1)
	go func() {
		// A revision far in the future: only the cancellation ends it.
		waitErr <- e.Cache.Get(ctx, "/pods/ns/x", storage.GetOptions{ResourceVersion: strconv.FormatUint(e.Cache.RV()+1_000_000, 10)}, &example.Pod{})
	}()
	cancel()
	select {
	case err := <-waitErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("wait ended with %v, want context.Canceled", err)
		}
	case <-time.After(wait30s):
		t.Fatal("cancelled wait did not return")
	}
	for _, w := range ws {
		for range w.ResultChan() {
		}
	}
	goleak.VerifyNone(t, ignore, otherTestsClients)
}

const wait30s = 30 * time.Second

// TestModel applies random creates, updates and deletes to etcd through the
// cache and compares the cache's LIST (Exact and NotOlderThan), GET and
// WATCH against a plain map replayed from the writes, at every revision.
// Set FRESHCACHE_SEED to replay a failure.
func TestModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("FRESHCACHE_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	defer func() {
		if t.Failed() {
			t.Logf("replay with FRESHCACHE_SEED=%d", seed)
		}
	}()
	e := cachetest.Start(t, cachetest.NodeNameAndNamespaceIndex)
	ctx := context.Background()

	type state map[string]string // key -> node name
	type change struct {
		rv   uint64
		typ  watch.EventType
		key  string
		node string
	}
	cur := state{}
	states := map[uint64]state{}
	var log []change
	startRV := e.Cache.RV()
	states[startRV] = state{}
	watchFrom := startRV
	w, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: strconv.FormatUint(watchFrom, 10), Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	keys := []string{"a", "b", "c", "d", "e", "f"}
	for step := 0; step < 150; step++ {
		name := keys[rng.Intn(len(keys))]
		node := fmt.Sprintf("n%d", rng.Intn(3))
		p := mkPod("ns", name, node)
		key := cachetest.PodKey(p)
		out := &example.Pod{}
		var typ watch.EventType
		if _, exists := cur[key]; !exists {
			if err := e.Cache.Create(ctx, key, p, out, 0); err != nil {
				t.Fatal(err)
			}
			typ = watch.Added
			cur[key] = node
		} else if rng.Intn(3) == 0 {
			if err := e.Cache.Delete(ctx, key, out, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			typ = watch.Deleted
			delete(cur, key)
		} else {
			err := e.Cache.GuaranteedUpdate(ctx, key, out, false, nil, storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
				q := obj.(*example.Pod)
				q.Spec.NodeName = node
				q.Labels = map[string]string{"step": strconv.Itoa(step)}
				return q, nil
			}), nil)
			if err != nil {
				t.Fatal(err)
			}
			typ = watch.Modified
			cur[key] = node
		}
		rv, _ := strconv.ParseUint(out.ResourceVersion, 10, 64)
		snap := state{}
		for k, v := range cur {
			snap[k] = v
		}
		states[rv] = snap
		log = append(log, change{rv: rv, typ: typ, key: key, node: node})

		if rng.Intn(10) != 0 {
			continue
		}
		// Compare a LIST at an earlier revision (Exact) ...
		at := log[rng.Intn(len(log))].rv
		list := &example.PodList{}
		if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: strconv.FormatUint(at, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Recursive: true, Predicate: storage.Everything}, list); err != nil {
			t.Fatalf("step %d: exact list at %d: %v", step, at, err)
		}
		if got := asState(list); !reflect.DeepEqual(got, map[string]string(states[at])) {
			t.Fatalf("step %d: exact list at %d = %v, model %v", step, at, got, states[at])
		}
		// ... a LIST not older than now ...
		if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Recursive: true, Predicate: storage.Everything}, list); err != nil {
			t.Fatalf("step %d: list at %d: %v", step, rv, err)
		}
		if got := asState(list); !reflect.DeepEqual(got, map[string]string(states[rv])) {
			t.Fatalf("step %d: list at %d = %v, model %v", step, rv, got, states[rv])
		}
		// ... and a GET of the key just written.
		got := &example.Pod{}
		err := e.Cache.Get(ctx, key, storage.GetOptions{ResourceVersion: strconv.FormatUint(rv, 10)}, got)
		if node, ok := states[rv][key]; ok {
			if err != nil || got.Spec.NodeName != node {
				t.Fatalf("step %d: get %s at %d = %v/%v, model %s", step, key, rv, got.Spec.NodeName, err, node)
			}
		} else if !storage.IsNotFound(err) {
			t.Fatalf("step %d: get deleted %s at %d: %v", step, key, rv, err)
		}
	}
	// The watch must have replayed exactly the log.
	for i, want := range log {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events", i)
			}
			obj := ev.Object
			if co, ok := obj.(runtime.CacheableObject); ok {
				obj = co.GetObject() // the fan-out shares objects among watchers
			}
			p := obj.(*example.Pod)
			rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
			if ev.Type != want.typ || rv != want.rv || cachetest.PodKey(p) != want.key {
				t.Fatalf("watch event %d = %s %s@%d, model %s %s@%d", i, ev.Type, cachetest.PodKey(p), rv, want.typ, want.key, want.rv)
			}
		case <-time.After(wait30s):
			t.Fatalf("watch event %d did not arrive", i)
		}
	}
}

func asState(l *example.PodList) map[string]string {
	out := map[string]string{}
	keys := make([]string, 0, len(l.Items))
	for i := range l.Items {
		k := cachetest.PodKey(&l.Items[i])
		out[k] = l.Items[i].Spec.NodeName
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return out
}

func TestOptionsValidation(t *testing.T) {
	bad := []watchcache.Options{
		{EventsHistoryWindow: -1},
		{HistoryCapacity: -1},
		{ConsistentReadTimeout: -time.Second},
		{TimeoutAction: "maybe"},
		{InconsistencyCheckPeriod: -time.Minute},
		{FallbackBudget: math.NaN()},
		{FallbackBudget: math.Inf(1)},
	}
	for _, o := range bad {
		// The options are checked before the (empty) Config, so the error
		// must name what is wrong with them.
		_, err := watchcache.New(o, watchcache.Config{})
		if !errors.Is(err, watchcache.ErrInvalidOptions) || strings.Contains(err.Error(), "Config needs") {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions about the options", o, err)
		}
	}
	if _, err := watchcache.New(watchcache.Options{FallbackBudget: -1}, watchcache.Config{}); err == nil || !strings.Contains(err.Error(), "Config needs") {
		t.Errorf("valid options, empty Config: err = %v, want the Config's error", err)
	}
}

// TestMisplacedKeysAreReadFromEtcd writes objects through the cache at
// keys that are not their KeyFunc keys, as upstream's RunTestKeySchema
// does: the cache holds them elsewhere (or nowhere), so reads of either
// key, single or in a range, are answered by etcd. Other keys are still
// served by the cache.
func TestMisplacedKeysAreReadFromEtcd(t *testing.T) {
	rec := newRecorder()
	e := cachetest.Start(t, cachetest.WithRecorder(rec))
	ctx := context.Background()
	create(t, e.Cache, "ns", "a", "")
	// An object named other/y at ns/x: the cache would hold it at other/y.
	if err := e.Cache.Create(ctx, "/pods/ns/x", mkPod("other", "y", ""), &example.Pod{}, 0); err != nil {
		t.Fatal(err)
	}
	// An object without a name at /pods/ns: the cache would hold it at
	// "/pods//", next to nothing etcd has.
	if err := e.Cache.Create(ctx, "/pods/ns", &example.Pod{}, &example.Pod{}, 0); err != nil {
		t.Fatal(err)
	}
	for _, rv := range []string{"", "0"} {
		got := &example.Pod{}
		if err := e.Cache.Get(ctx, "/pods/ns/x", storage.GetOptions{ResourceVersion: rv}, got); err != nil || got.Name != "y" {
			t.Errorf("GET rv=%q /pods/ns/x: %v %q, want the object etcd stores there", rv, err, got.Name)
		}
		if err := e.Cache.Get(ctx, "/pods/ns", storage.GetOptions{ResourceVersion: rv}, got); err != nil {
			t.Errorf("GET rv=%q /pods/ns: %v, want the object etcd stores there", rv, err)
		}
		if err := e.Cache.Get(ctx, "/pods/other/y", storage.GetOptions{ResourceVersion: rv}, got); !storage.IsNotFound(err) {
			t.Errorf("GET rv=%q /pods/other/y: %v %q, want NotFound: etcd has nothing there", rv, err, got.Name)
		}
		list := &example.PodList{}
		if err := e.Cache.GetList(ctx, "/pods/ns/", listOpts(rv), list); err != nil || !names(list)["a"] || !names(list)["y"] || len(list.Items) != 2 {
			t.Errorf("LIST rv=%q /pods/ns/: %v %v, want a and y (at ns/x)", rv, err, names(list))
		}
		list = &example.PodList{}
		if err := e.Cache.GetList(ctx, "/pods/other/", listOpts(rv), list); err != nil || len(list.Items) != 0 {
			t.Errorf("LIST rv=%q /pods/other/: %v %v, want nothing", rv, err, names(list))
		}
	}
	// A key nobody misplaced is still the cache's.
	before := rec.count("get/consistent/" + metrics.OutcomeCache)
	if err := e.Cache.Get(ctx, "/pods/ns/a", storage.GetOptions{}, &example.Pod{}); err != nil {
		t.Fatal(err)
	}
	if n := rec.count("get/consistent/"+metrics.OutcomeCache) - before; n != 1 {
		t.Errorf("GET rv=\"\" of a well-placed key: %d reads served by the cache, want 1", n)
	}
}

// TestShardedListCarriesShardInfo enables upstream's alpha
// ShardedListAndWatch gate: a LIST filtered by a shard selector says so in
// its ListMeta.ShardInfo, as upstream's cacher and the etcd3 store set it,
// whatever resource version it is served at. Without a selector there is
// none.
func TestShardedListCarriesShardInfo(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, apiserverfeatures.ShardedListAndWatch, true)
	everyShard := sharding.NewSelector(sharding.ShardRangeRequirement{
		Key: "object.metadata.namespace", Start: "0x0000000000000000", End: "0x10000000000000000",
	})
	noShard := sharding.NewSelector(sharding.ShardRangeRequirement{
		Key: "object.metadata.namespace", Start: "0x0000000000000000", End: "0x0000000000000000",
	})
	check := func(t *testing.T, s storage.Interface, last string) {
		ctx, cancel := context.WithTimeout(context.Background(), upstreamReadTimeout)
		defer cancel()
		for _, rv := range []string{"", "0", last} {
			for _, sel := range []sharding.Selector{everyShard, noShard, nil} {
				opts := listOpts(rv)
				opts.Predicate.ShardSelector = sel
				list := &example.PodList{}
				if err := s.GetList(ctx, "/pods/", opts, list); err != nil {
					t.Fatalf("rv=%q shard %v: %v", rv, sel, err)
				}
				want := 2
				switch {
				case sel == nil:
					if list.ShardInfo != nil {
						t.Errorf("rv=%q without a shard selector: ShardInfo %+v", rv, list.ShardInfo)
					}
				case list.ShardInfo == nil || list.ShardInfo.Selector != sel.String():
					t.Errorf("rv=%q shard %q: ShardInfo %+v, want the selector", rv, sel.String(), list.ShardInfo)
				}
				if sel == noShard {
					want = 0
				}
				if len(list.Items) != want {
					t.Errorf("rv=%q shard %v: %d items, want %d", rv, sel, len(list.Items), want)
				}
			}
		}
	}
	t.Run("freshcache", func(t *testing.T) {
		e := cachetest.Start(t)
		create(t, e.Cache, "a", "p", "")
		last := create(t, e.Cache, "b", "p", "").ResourceVersion
		check(t, e.Cache, last)
	})
	t.Run("upstream", func(t *testing.T) {
		e := cachetest.Start(t)
		up := startUpstream(t, e.Server.V3Client)
		create(t, e.Etcd, "a", "p", "")
		last := create(t, e.Etcd, "b", "p", "").ResourceVersion
		check(t, up, last)
	})
}
