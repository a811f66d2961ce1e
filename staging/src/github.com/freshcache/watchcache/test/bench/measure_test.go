package bench

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// heapNow is the live heap after two full collections.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measureHeap builds one cache alone, and returns the live heap it added
// once ready, per pod. The cache is stopped before returning.
func measureHeap(tb testing.TB, w *world, im impl) float64 {
	before := heapNow()
	s, stop := im.build(tb, w)
	after := heapNow()
	runtime.KeepAlive(s)
	stop()
	heapNow() // let the next measurement start from a collected heap
	return (float64(after) - float64(before)) / float64(w.shape.pods)
}

// measureList runs rv=0 LISTs of one node's pods from conc goroutines for
// d and returns requests per second. Nodes are taken round-robin.
func measureList(tb testing.TB, s storage.Interface, sh shape, conc int, d time.Duration) float64 {
	ctx := context.Background()
	var (
		ops     atomic.Int64
		next    atomic.Int64
		stop    atomic.Bool
		failed  atomic.Value
		wg      sync.WaitGroup
		perNode = sh.pods / sh.nodes
	)
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				n := int(next.Add(1))
				list, err := listNode(ctx, s, sh.node(n))
				if err != nil {
					failed.Store(err)
					return
				}
				if len(list.Items) != perNode {
					failed.Store(fmt.Errorf("node %s: %d pods, want %d", sh.node(n), len(list.Items), perNode))
					return
				}
				ops.Add(1)
			}
		}()
	}
	timer := time.NewTimer(d)
	<-timer.C
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	return float64(ops.Load()) / elapsed.Seconds()
}

// watchScenario is one watch-dispatch measurement.
type watchScenario struct {
	name string
	// watchers is how many watches are open.
	watchers int
	// byNode: watcher j selects spec.nodeName=node(j) (through the trigger
	// index); otherwise every watcher sees every pod.
	byNode bool
	// updates is how many pod updates are written, pod i for i < updates,
	// so they spread round-robin over nodes.
	updates int
	// batch is how many updates are written per round; a round ends when
	// every watcher has received its events of the round. Rounds keep the
	// in-flight events per watcher below both caches' buffers, so that the
	// measure is dispatch throughput, not which cache tolerates bursts.
	batch int
	// encode: each watcher encodes every object it receives with the
	// protobuf codec, as the apiserver's watch handler does per client.
	encode bool
}

// expectedFor is how many MODIFIED events the update of pod i produces.
func (sc watchScenario) expectedFor(sh shape, i int) int64 {
	if !sc.byNode {
		return int64(sc.watchers)
	}
	// Watchers on i's node: those j < watchers with j%nodes == i%nodes.
	n := int64(sc.watchers / sh.nodes)
	if i%sh.nodes < sc.watchers%sh.nodes {
		n++
	}
	return n
}

// watchResult is one run of a watch scenario.
type watchResult struct {
	eventsPerSec float64
	writeSecs    float64 // time spent writing updates to etcd (sum over rounds)
	totalSecs    float64 // first write to last delivery
	terminated   int64   // watchers closed before receiving everything
}

// measureWatch opens the scenario's watchers on s from the current
// revision, then writes the updates in rounds of sc.batch concurrent
// writes, each round waiting until every watcher received its events (or
// the deadline passes).
func measureWatch(tb testing.TB, w *world, s storage.Interface, sc watchScenario) watchResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rv, err := w.currentRV(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	// Make sure the cache has seen rv, so that watches from rv start now.
	if _, err := listNode(ctx, s, w.shape.node(0)); err != nil {
		tb.Fatal(err)
	}
	var (
		got        atomic.Int64
		target     atomic.Int64
		reached    = make(chan struct{}, 1)
		terminated atomic.Int64
		wg         sync.WaitGroup
	)
	target.Store(1 << 62)
	watches := make([]watch.Interface, 0, sc.watchers)
	for j := range sc.watchers {
		pred := storage.Everything
		if sc.byNode {
			pred = nodePredicate(w.shape.node(j))
		}
		wi, err := s.Watch(ctx, prefix, storage.ListOptions{ResourceVersion: fmt.Sprint(rv), Recursive: true, Predicate: pred})
		if err != nil {
			tb.Fatal(err)
		}
		watches = append(watches, wi)
	}
	for _, wi := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Modified:
				case watch.Error:
					tb.Errorf("watch error: %v", ev.Object)
					continue
				default:
					continue
				}
				if sc.encode {
					buf.Reset()
					if err := cachetest.ProtoCodec.Encode(ev.Object, &buf); err != nil {
						tb.Errorf("encode: %v", err)
					}
				} else if _, err := meta.Accessor(ev.Object); err != nil {
					tb.Errorf("event object %T: %v", ev.Object, err)
				}
				if got.Add(1) >= target.Load() {
					select {
					case reached <- struct{}{}:
					default:
					}
				}
			}
			if ctx.Err() == nil {
				terminated.Add(1)
			}
		}()
	}
	batch := sc.batch
	if batch <= 0 {
		batch = sc.updates
	}
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	var (
		want    int64
		writing time.Duration
		errs    = make(chan error, batch)
	)
	start := time.Now()
rounds:
	for first := 0; first < sc.updates; first += batch {
		last := min(first+batch, sc.updates)
		for i := first; i < last; i++ {
			want += sc.expectedFor(w.shape, i)
		}
		target.Store(want)
		ws := time.Now()
		for i := first; i < last; i++ {
			go func() { errs <- w.update(ctx, i) }()
		}
		for i := first; i < last; i++ {
			if err := <-errs; err != nil {
				tb.Fatal(err)
			}
		}
		writing += time.Since(ws)
		for got.Load() < want {
			select {
			case <-reached:
			case <-deadline.C:
				tb.Errorf("%s: %d of %d events delivered before the deadline", sc.name, got.Load(), want)
				break rounds
			}
		}
	}
	total := time.Since(start)
	written := writing
	cancel()
	for _, wi := range watches {
		wi.Stop()
	}
	wg.Wait()
	return watchResult{
		eventsPerSec: float64(got.Load()) / total.Seconds(),
		writeSecs:    written.Seconds(),
		totalSecs:    total.Seconds(),
		terminated:   terminated.Load(),
	}
}
