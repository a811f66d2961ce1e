package fanout

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/metrics"
)

// BenchmarkDispatch measures the fan-out alone (no etcd, no cache lock):
// 1,000 watchers, each drained by a consumer goroutine, and events
// dispatched in rounds of `batch`, each round waiting until every watcher
// received it. One op is one delivered event, so allocs/op and B/op are
// per delivered event. Allocation counts are deterministic; ns/op on a
// shared machine is not.
func BenchmarkDispatch(b *testing.B) {
	const nodes = 200
	for _, bc := range []struct {
		name   string
		byNode bool // watcher j selects spec.nodeName=node(j%nodes) through the trigger
		batch  int
	}{
		{"all-pods/watchers=1000", false, 8},
		{"by-node/watchers=1000", true, 200},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := New(Config{
				Versioner:   storage.APIObjectVersioner{},
				NewFunc:     func() runtime.Object { return &example.Pod{} },
				TriggerFunc: func(o runtime.Object) string { return o.(*example.Pod).Spec.NodeName },
				Metrics:     metrics.Discard{},
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			node := func(i int) string { return fmt.Sprintf("node-%03d", i%nodes) }
			var (
				got     atomic.Int64
				perNode = make([]int64, nodes) // watchers per node
				wg      sync.WaitGroup
			)
			for j := range 1000 {
				spec := Spec{Ctx: ctx, Key: "/pods/", Recursive: true, Predicate: storage.Everything}
				if bc.byNode {
					n := node(j)
					spec.Predicate = storage.SelectionPredicate{Label: labels.Everything(), Field: fields.OneTermEqualSelector("spec.nodeName", n)}
					spec.Trigger = &n
					perNode[j%nodes]++
				}
				w := f.Add(spec)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ev := range w.ResultChan() {
						if ev.Type == watch.Modified {
							got.Add(1)
						}
					}
				}()
			}
			pods := make([]*store.Object, 4*nodes)
			for i := range pods {
				p := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i), ResourceVersion: "1"}, Spec: example.PodSpec{NodeName: node(i)}}
				pods[i] = &store.Object{Key: "/pods/ns/" + p.Name, Obj: p, RV: 1, Labels: labels.Set(p.Labels), Fields: store.NewFields(fields.Set{"spec.nodeName": p.Spec.NodeName, "metadata.name": p.Name})}
			}
			// Events are made up front so that only the fan-out allocates.
			var evs []history.Event
			var want int64
			for i := 0; want < int64(b.N); i++ {
				o := pods[i%len(pods)]
				evs = append(evs, history.Event{Type: watch.Modified, Object: o, Prev: o, RV: uint64(i + 2)})
				if bc.byNode {
					want += perNode[i%nodes]
				} else {
					want += 1000
				}
			}
			b.ReportAllocs()
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			b.ResetTimer()
			for first := 0; first < len(evs); first += bc.batch {
				for i := first; i < min(first+bc.batch, len(evs)); i++ {
					f.Dispatch(&evs[i])
				}
				// Wait for the consumers; the fan-out never blocks Dispatch.
				for target := min(want, deliveredBy(bc.byNode, perNode, first+bc.batch)); got.Load() < target; {
					goruntime.Gosched()
				}
			}
			b.StopTimer()
			goruntime.ReadMemStats(&after)
			// allocs/op rounds to an integer; this keeps the fraction.
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(want), "allocs/event")
			if g := got.Load(); g != want {
				b.Fatalf("delivered %d events, want %d", g, want)
			}
			b.ReportMetric(float64(want)/float64(b.N), "events/op")
			f.TerminateAll("")
			wg.Wait()
		})
	}
}

// deliveredBy is how many events the first n dispatched events produce.
func deliveredBy(byNode bool, perNode []int64, n int) int64 {
	if !byNode {
		return int64(n) * 1000
	}
	var s int64
	for i := range n {
		s += perNode[i%len(perNode)]
	}
	return s
}
