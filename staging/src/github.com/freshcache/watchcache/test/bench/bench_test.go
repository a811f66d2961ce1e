package bench

import (
	"context"
	"testing"
)

// BenchmarkListByNode runs rv=0 LIST by spec.nodeName on each cache, for
// profiling (go test -bench ListByNode -cpuprofile ...). The data set is
// FRESHCACHE_BENCH_PODS pods (default 20000) over 200 nodes.
func BenchmarkListByNode(b *testing.B) {
	sh := shape{pods: envInt("FRESHCACHE_BENCH_PODS", 20000), nodes: 200, namespaces: 50}
	w := newWorld(b, sh)
	for _, im := range impls {
		s, stop := im.build(b, w)
		b.Run(im.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := listNode(ctx, s, sh.node(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		stop()
	}
}

// BenchmarkHeapPerObject reports the live heap each cache adds per pod.
func BenchmarkHeapPerObject(b *testing.B) {
	sh := shape{pods: envInt("FRESHCACHE_BENCH_PODS", 20000), nodes: 200, namespaces: 50}
	w := newWorld(b, sh)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = measureHeap(b, w, im)
			}
			b.ReportMetric(per, "B/object")
		})
	}
}
