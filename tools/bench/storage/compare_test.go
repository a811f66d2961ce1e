package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/freshcache/freshcache/tools/bench/quantile"
)

// The side-by-side comparison of the two caches, upstream's cacher and
// freshcache, each built alone over one embedded etcd through its storage
// decorator and the real pod registry (no etcd backend: every number here
// is about a cache). What it measures:
//
//   - heap per cached object (MeasureMemory);
//   - rv=0 LIST by spec.nodeName, requests per second at concurrency 1 and
//     4 (the list-node closed loop of `freshcache-bench storage`);
//   - watch dispatch (measureDispatch): events per second delivered to
//     1,000 watchers, by node and of every pod, with and without encoding
//     each event per watcher.
//
// A plain `go test` runs only TestBackendsAgree. The full comparison is
// opt-in, because it takes minutes and its numbers only mean something on
// a quiet machine:
//
//	cd tools/bench && FRESHCACHE_BENCH=1 go test ./storage -run TestCompare -v -timeout 60m
//
// FRESHCACHE_BENCH_PODS, _NODES, _REPEATS and _LIST_SECONDS change the
// shape (defaults 20000, 200, 3, 3). It prints a Markdown table of medians.
// The benchmarks (go test -bench 'ListByNode|HeapPerObject' ./storage) run
// the same measurements through testing.B, for profiling.

// cacheBackends are the backends compared here.
var cacheBackends = []string{BackendUpstream, BackendFreshcache}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// startCompareEnv is startTestEnv with the comparison's shape: 50
// namespaces, pods and nodes from FRESHCACHE_BENCH_PODS and _NODES.
func startCompareEnv(tb testing.TB, within time.Duration) (context.Context, *Env) {
	tb.Helper()
	return startTestEnv(tb, Shape{
		Pods:       envInt("FRESHCACHE_BENCH_PODS", 20000),
		Nodes:      envInt("FRESHCACHE_BENCH_NODES", 200),
		Namespaces: 50,
	}, within)
}

// listNodeRV0 is one rv=0 LIST of the pods of node n.
func listNodeRV0(ctx context.Context, b *podBackend, n int) (*api.PodList, error) {
	o := &metainternalversion.ListOptions{ResourceVersion: "0", FieldSelector: nodeSelector(n)}
	obj, err := b.store.List(genericapirequest.WithNamespace(ctx, metav1.NamespaceAll), o)
	if err != nil {
		return nil, err
	}
	return obj.(*api.PodList), nil
}

// checkDispatch fails the test unless every watcher of r received every
// event it should, without an error.
func checkDispatch(t *testing.T, name string, r dispatchResult) {
	t.Helper()
	if r.terminated != 0 || r.undelivered != 0 || r.errors != 0 {
		t.Errorf("%s: %d watchers terminated, %d events undelivered, %d errors (first: %s)", name, r.terminated, r.undelivered, r.errors, r.firstError)
	}
}

// TestBackendsAgree checks, on a small data set, that both caches build
// over one etcd, that their rv=0 LIST-by-node answers agree item for item,
// and that the dispatch measurement delivers every event. It asserts on
// results, never on timings.
func TestBackendsAgree(t *testing.T) {
	shape := Shape{Pods: 300, Nodes: 10, Namespaces: 3}
	ctx, env := startEnvUnlessShort(t, "two pod storages", shape, 3*time.Minute)
	built := map[string]*podBackend{}
	for _, name := range cacheBackends {
		b, err := env.newPodBackend(ctx, name, time.Minute, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.destroy)
		built[name] = b
	}
	for n := range shape.Nodes {
		lists := map[string]*api.PodList{}
		for _, name := range cacheBackends {
			list, err := listNodeRV0(ctx, built[name], n)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(list.Items) != shape.PodsOnNode(n) {
				t.Errorf("%s: node %s has %d pods, want %d", name, NodeName(n), len(list.Items), shape.PodsOnNode(n))
			}
			for _, p := range list.Items {
				if p.Spec.NodeName != NodeName(n) {
					t.Errorf("%s: pod %s on %s listed for %s", name, p.Name, p.Spec.NodeName, NodeName(n))
				}
			}
			lists[name] = list
		}
		up, fc := lists[BackendUpstream], lists[BackendFreshcache]
		if len(up.Items) != len(fc.Items) {
			t.Fatalf("node %s: upstream %d pods, freshcache %d", NodeName(n), len(up.Items), len(fc.Items))
		}
		for i := range up.Items {
			if !apiequality.Semantic.DeepEqual(up.Items[i], fc.Items[i]) {
				t.Errorf("node %s item %d differs: upstream %s/%s rv %s, freshcache %s/%s rv %s", NodeName(n), i,
					up.Items[i].Namespace, up.Items[i].Name, up.Items[i].ResourceVersion,
					fc.Items[i].Namespace, fc.Items[i].Name, fc.Items[i].ResourceVersion)
			}
		}
	}
	// Every watcher of both caches receives exactly its events.
	for _, name := range cacheBackends {
		for _, sc := range []dispatchScenario{
			{name: "by node", watchers: 20, byNode: true, updates: 30, batch: 7},
			{name: "all pods, encoded", watchers: 5, updates: 10, batch: 3, encode: true},
		} {
			r, err := env.measureDispatch(ctx, built[name], sc)
			if err != nil {
				t.Fatalf("%s %s: %v", name, sc.name, err)
			}
			checkDispatch(t, name+" "+sc.name, r)
		}
	}
}

// dispatchScenarios are the watch-dispatch measurements of TestCompare.
var dispatchScenarios = []dispatchScenario{
	{name: "1,000 watchers by spec.nodeName (5/node), 4,000 updates in rounds of 200", watchers: 1000, byNode: true, updates: 4000, batch: 200},
	{name: "1,000 all-pods watchers, 400 updates in rounds of 8", watchers: 1000, updates: 400, batch: 8},
	{name: "1,000 all-pods watchers, 400 updates in rounds of 8, each event encoded (protobuf) per watcher", watchers: 1000, updates: 400, batch: 8, encode: true},
}

// TestCompare is the side-by-side measurement. It is skipped unless
// FRESHCACHE_BENCH is set; see the comment at the top of this file.
func TestCompare(t *testing.T) {
	if os.Getenv("FRESHCACHE_BENCH") == "" {
		t.Skip("set FRESHCACHE_BENCH=1 to run the side-by-side measurement")
	}
	repeats := envInt("FRESHCACHE_BENCH_REPEATS", 3)
	listCfg := Config{Duration: time.Duration(envInt("FRESHCACHE_BENCH_LIST_SECONDS", 3)) * time.Second}.WithDefaults()
	t0 := time.Now()
	ctx, env := startCompareEnv(t, time.Hour)
	sh := env.Shape
	t.Logf("populated %d pods over %d nodes in %v", sh.Pods, sh.Nodes, time.Since(t0).Round(time.Millisecond))

	type key struct{ measure, backend string }
	results := map[key][]float64{}
	var order []string
	add := func(measure, backend string, v float64) {
		k := key{measure, backend}
		if _, ok := results[k]; !ok && backend == cacheBackends[0] {
			order = append(order, measure)
		}
		results[k] = append(results[k], v)
		t.Logf("%-90s %-10s %12.1f", measure, backend, v)
	}
	for r := range repeats {
		// Alternate the order so that neither cache always runs first.
		names := slices.Clone(cacheBackends)
		if r%2 == 1 {
			slices.Reverse(names)
		}
		for _, name := range names {
			rows, err := MeasureMemory(ctx, env, []string{name}, nil)
			if err != nil {
				t.Fatal(err)
			}
			add("heap per cached object (bytes)", name, rows[0].BytesPerObject)
		}
		for _, name := range names {
			b, err := env.newPodBackend(ctx, name, listCfg.ReadyTimeout, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []int{1, 4} {
				row, err := env.runClosedLoop(ctx, b, listCfg, ScenarioListNode, RVZero, c, Load{})
				if err != nil {
					t.Fatal(err)
				}
				if row.Errors != 0 || row.WrongCounts != 0 {
					t.Fatalf("%s list-node: %d errors (first: %s), %d wrong counts", name, row.Errors, row.FirstError, row.WrongCounts)
				}
				add(fmt.Sprintf("rv=0 LIST by spec.nodeName (%d pods), concurrency %d, req/s", sh.Pods/sh.Nodes, c), name, row.OpsPerSec)
			}
			for _, sc := range dispatchScenarios {
				res, err := env.measureDispatch(ctx, b, sc)
				if err != nil {
					t.Fatal(err)
				}
				checkDispatch(t, name+" "+sc.name, res)
				add("watch dispatch: "+sc.name+", events/s", name, res.eventsPerSec)
				t.Logf("    %s %s: writes took %.2fs, all delivered after %.2fs, %d watchers terminated",
					name, sc.name, res.writeSecs, res.totalSecs, res.terminated)
				if res.terminated > 0 {
					add("watch dispatch: "+sc.name+", watchers terminated", name, float64(res.terminated))
				}
			}
			b.destroy()
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n| measure (%d pods, %d nodes, median of %d) | upstream cacher | freshcache | freshcache / upstream |\n|---|---:|---:|---:|\n", sh.Pods, sh.Nodes, repeats)
	for _, m := range order {
		up, fc := quantile.Median(results[key{m, BackendUpstream}]), quantile.Median(results[key{m, BackendFreshcache}])
		ratio := "–"
		if up != 0 {
			ratio = fmt.Sprintf("%.2f", fc/up)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %s |\n", m, up, fc, ratio)
	}
	fmt.Fprintf(&b, "\nall runs:\n")
	for _, m := range order {
		fmt.Fprintf(&b, "- %s: upstream %s, freshcache %s\n", m, fmtList(results[key{m, BackendUpstream}], "%.0f"), fmtList(results[key{m, BackendFreshcache}], "%.0f"))
	}
	fmt.Fprintf(&b, "\n%s, GOMAXPROCS=%d, %s\n", runtime.Version(), runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	t.Log(b.String())
}

// BenchmarkListByNode runs rv=0 LIST by spec.nodeName on each cache, for
// profiling (go test -bench ListByNode -cpuprofile ...). The data set is
// FRESHCACHE_BENCH_PODS pods (default 20000) over FRESHCACHE_BENCH_NODES
// nodes (default 200).
func BenchmarkListByNode(b *testing.B) {
	ctx, env := startCompareEnv(b, time.Hour)
	for _, name := range cacheBackends {
		pb, err := env.newPodBackend(ctx, name, 5*time.Minute, "")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			r := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				if _, err := env.op(ctx, pb, ScenarioListNode, RVZero, r); err != nil {
					b.Fatal(err)
				}
			}
		})
		pb.destroy()
	}
}

// BenchmarkHeapPerObject reports the live heap each cache adds per pod.
func BenchmarkHeapPerObject(b *testing.B) {
	ctx, env := startCompareEnv(b, time.Hour)
	for _, name := range cacheBackends {
		b.Run(name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				rows, err := MeasureMemory(ctx, env, []string{name}, nil)
				if err != nil {
					b.Fatal(err)
				}
				per = rows[0].BytesPerObject
			}
			b.ReportMetric(per, "B/object")
		})
	}
}
