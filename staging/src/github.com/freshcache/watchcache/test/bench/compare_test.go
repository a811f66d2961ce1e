package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// TestHarnessAgrees checks, on a small data set, that the harness builds
// both caches over one etcd and that their rv=0 LIST-by-node answers and
// watch deliveries agree. It asserts on results, never on timings.
func TestHarnessAgrees(t *testing.T) {
	sh := shape{pods: 300, nodes: 10, namespaces: 3}
	w := newWorld(t, sh)
	ctx := context.Background()
	built := map[string]storage.Interface{}
	for _, im := range impls {
		s, stop := im.build(t, w)
		t.Cleanup(stop)
		built[im.name] = s
	}
	for n := range sh.nodes {
		node := sh.node(n)
		lists := map[string]*example.PodList{}
		for _, im := range impls {
			list, err := listNode(ctx, built[im.name], node)
			if err != nil {
				t.Fatalf("%s: %v", im.name, err)
			}
			if len(list.Items) != sh.pods/sh.nodes {
				t.Errorf("%s: node %s has %d pods, want %d", im.name, node, len(list.Items), sh.pods/sh.nodes)
			}
			for _, p := range list.Items {
				if p.Spec.NodeName != node {
					t.Errorf("%s: pod %s on %s listed for %s", im.name, p.Name, p.Spec.NodeName, node)
				}
			}
			lists[im.name] = list
		}
		up, fc := lists["upstream"], lists["freshcache"]
		if len(up.Items) != len(fc.Items) {
			t.Fatalf("node %s: upstream %d pods, freshcache %d", node, len(up.Items), len(fc.Items))
		}
		for i := range up.Items {
			if !apiequality.Semantic.DeepEqual(up.Items[i], fc.Items[i]) {
				t.Errorf("node %s item %d differs: upstream %s/%s rv %s, freshcache %s/%s rv %s", node, i,
					up.Items[i].Namespace, up.Items[i].Name, up.Items[i].ResourceVersion,
					fc.Items[i].Namespace, fc.Items[i].Name, fc.Items[i].ResourceVersion)
			}
		}
	}
	// Every watcher of both caches receives exactly its events.
	for _, im := range impls {
		for _, sc := range []watchScenario{
			{name: "by node", watchers: 20, byNode: true, updates: 30, batch: 7},
			{name: "all pods, encoded", watchers: 5, updates: 10, batch: 3, encode: true},
		} {
			if r := measureWatch(t, w, built[im.name], sc); r.terminated != 0 {
				t.Errorf("%s %s: %d watchers terminated", im.name, sc.name, r.terminated)
			}
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// scenarios are the watch-dispatch measurements of TestCompare.
func scenarios(sh shape) []watchScenario {
	return []watchScenario{
		{name: "1,000 watchers by spec.nodeName (5/node), 4,000 updates in rounds of 200", watchers: 1000, byNode: true, updates: 4000, batch: 200},
		{name: "1,000 all-pods watchers, 400 updates in rounds of 8", watchers: 1000, updates: 400, batch: 8},
		{name: "1,000 all-pods watchers, 400 updates in rounds of 8, each event encoded (protobuf) per watcher", watchers: 1000, updates: 400, batch: 8, encode: true},
	}
}

// TestCompare is the side-by-side measurement. It is skipped unless
// FRESHCACHE_BENCH is set; see the package documentation.
func TestCompare(t *testing.T) {
	if os.Getenv("FRESHCACHE_BENCH") == "" {
		t.Skip("set FRESHCACHE_BENCH=1 to run the side-by-side measurement")
	}
	sh := shape{
		pods:       envInt("FRESHCACHE_BENCH_PODS", 20000),
		nodes:      envInt("FRESHCACHE_BENCH_NODES", 200),
		namespaces: 50,
	}
	repeats := envInt("FRESHCACHE_BENCH_REPEATS", 3)
	listFor := time.Duration(envInt("FRESHCACHE_BENCH_LIST_SECONDS", 3)) * time.Second
	t0 := time.Now()
	w := newWorld(t, sh)
	t.Logf("populated %d pods (%d B encoded each) over %d nodes in %v", sh.pods, sh.encodedSize(1), sh.nodes, time.Since(t0).Round(time.Millisecond))

	type key struct{ measure, impl string }
	results := map[key][]float64{}
	var order []string
	add := func(measure, im string, v float64) {
		k := key{measure, im}
		if _, ok := results[k]; !ok && im == impls[0].name {
			order = append(order, measure)
		}
		results[k] = append(results[k], v)
		t.Logf("%-90s %-10s %12.1f", measure, im, v)
	}
	concs := []int{1, 4}
	for r := range repeats {
		// Alternate the order so that neither cache always runs first.
		ims := slices.Clone(impls)
		if r%2 == 1 {
			slices.Reverse(ims)
		}
		for _, im := range ims {
			add("heap per cached object (bytes)", im.name, measureHeap(t, w, im))
		}
		for _, im := range ims {
			s, stop := im.build(t, w)
			for _, c := range concs {
				add(fmt.Sprintf("rv=0 LIST by spec.nodeName (%d pods), concurrency %d, req/s", sh.pods/sh.nodes, c), im.name, measureList(t, s, sh, c, listFor))
			}
			for _, sc := range scenarios(sh) {
				res := measureWatch(t, w, s, sc)
				add("watch dispatch: "+sc.name+", events/s", im.name, res.eventsPerSec)
				t.Logf("    %s %s: writes took %.2fs, all delivered after %.2fs, %d watchers terminated",
					im.name, sc.name, res.writeSecs, res.totalSecs, res.terminated)
				if res.terminated > 0 {
					add("watch dispatch: "+sc.name+", watchers terminated", im.name, float64(res.terminated))
				}
			}
			stop()
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n| measure (%d pods, %d nodes, median of %d) | upstream cacher | freshcache | freshcache / upstream |\n|---|---:|---:|---:|\n", sh.pods, sh.nodes, repeats)
	for _, m := range order {
		up, fc := median(results[key{m, "upstream"}]), median(results[key{m, "freshcache"}])
		ratio := "–"
		if up != 0 {
			ratio = fmt.Sprintf("%.2f", fc/up)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %s |\n", m, up, fc, ratio)
	}
	fmt.Fprintf(&b, "\nall runs:\n")
	for _, m := range order {
		fmt.Fprintf(&b, "- %s: upstream %v, freshcache %v\n", m, rounded(results[key{m, "upstream"}]), rounded(results[key{m, "freshcache"}]))
	}
	fmt.Fprintf(&b, "\n%s, GOMAXPROCS=%d, %s\n", runtime.Version(), runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	t.Log(b.String())
}

func rounded(xs []float64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return out
}
