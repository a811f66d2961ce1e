package storage

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// runFanout measures WATCH fan-out: c watchers on each of the first
// cfg.WatchNodes nodes, each with the node's field selector, started at rv
// mode rv. Setup (opening watches and draining their initial events) is
// timed separately. Then pods on those nodes are updated at
// cfg.WatchWritesPerSec for cfg.Duration; an op is one event delivered to
// one watcher, and its latency is delivery time minus the time the writer
// stamped into the pod just before its etcd Put.
func (e *Env) runFanout(ctx context.Context, b *podBackend, cfg Config, rv string, c int) (Row, error) {
	k := cfg.WatchNodes
	var targets []int
	for i := range e.Shape.Pods {
		if i%e.Shape.Nodes < k {
			targets = append(targets, i)
		}
	}
	load := cfg.Load
	load.PodWritesPerSec = cfg.WatchWritesPerSec
	load.PodTargets = targets
	row := Row{Backend: b.name, Scenario: ScenarioWatchFan, RV: rv, Concurrency: c, Load: load, Watchers: c * k}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := genericapirequest.WithNamespace(ctx, metav1.NamespaceAll)

	var (
		start     atomic.Int64 // Unix nanos; events stamped earlier are not measured
		delivered atomic.Int64
		errs      atomic.Int64
		firstErr  report.FirstError
		mu        sync.Mutex
		lat       []time.Duration
		wg        sync.WaitGroup
	)
	start.Store(1<<63 - 1)
	initialLeft := sync.WaitGroup{}
	setupBegin := time.Now()
	watchers := make([]watch.Interface, 0, c*k)
	defer func() {
		for _, w := range watchers {
			w.Stop()
		}
		wg.Wait()
	}()
	for node := range k {
		for range c {
			o := &metainternalversion.ListOptions{FieldSelector: nodeSelector(node), ResourceVersion: e.resourceVersion(rv)}
			w, err := b.store.Watch(all, o)
			if err != nil {
				return row, fmt.Errorf("storage: %s watch (rv %s): %w", b.name, rv, err)
			}
			watchers = append(watchers, w)
			want := 0
			if rv != RVNewest {
				want = e.Shape.PodsOnNode(node)
			}
			initialLeft.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				initial := 0
				signalled := want == 0
				if signalled {
					initialLeft.Done()
				}
				var local []time.Duration
				defer func() {
					if !signalled {
						initialLeft.Done()
					}
					mu.Lock()
					lat = append(lat, local...)
					mu.Unlock()
				}()
				for ev := range w.ResultChan() {
					now := time.Now()
					switch ev.Type {
					case watch.Error:
						errs.Add(1)
						firstErr.Set(fmt.Sprintf("watch error event: %v", ev.Object))
						continue
					case watch.Bookmark:
						continue
					}
					// upstream's cacher wraps events in a caching object;
					// meta.Accessor sees through it.
					pod, err := meta.Accessor(ev.Object)
					if err != nil {
						continue
					}
					if !signalled && ev.Type == watch.Added {
						initial++
						if initial == want {
							signalled = true
							initialLeft.Done()
						}
						continue
					}
					ts, err := strconv.ParseInt(pod.GetAnnotations()[AnnotationWritten], 10, 64)
					if err != nil || ts < start.Load() {
						continue
					}
					delivered.Add(1)
					local = append(local, now.Sub(time.Unix(0, ts)))
				}
			}()
		}
	}
	if !waitGroupWithin(&initialLeft, cfg.WatchSetupTimeout) {
		firstErr.Set(fmt.Sprintf("initial events not all delivered within %v", cfg.WatchSetupTimeout))
		errs.Add(1)
	}
	row.SetupSeconds = time.Since(setupBegin).Seconds()

	before := takeSample(b.name)
	start.Store(before.at.UnixNano())
	w := e.StartLoad(ctx, load)
	select { // the measurement window itself
	case <-ctx.Done():
	case <-time.After(cfg.Duration):
	}
	writes, err := w.Stop()
	if err != nil {
		return row, fmt.Errorf("storage: background writes: %w", err)
	}
	row.EventsExpected = writes * int64(c)
	// Let in-flight events arrive: wait until every expected event was
	// delivered, or 5s.
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	for delivered.Load() < row.EventsExpected && time.Now().Before(deadline) {
		<-tick.C
	}
	tick.Stop()
	after := takeSample(b.name)
	for _, w := range watchers {
		w.Stop()
	}
	watchers = nil
	wg.Wait()

	row.EventsDelivered = delivered.Load()
	row.Ops = row.EventsDelivered
	row.Errors = errs.Load()
	row.FirstError = firstErr.Get()
	mu.Lock()
	defer mu.Unlock()
	row.fill(before, after, lat, row.Ops)
	// Throughput is over the write window, not the drain.
	if row.Ops > 0 {
		row.OpsPerSec = float64(row.Ops) / cfg.Duration.Seconds()
	}
	return row, nil
}

func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
