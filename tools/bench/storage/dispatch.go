package storage

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// dispatchScenario is one watch-dispatch measurement: how fast a backend
// delivers a burst of updates to many open watches, end to end from the
// first etcd write until every watcher has received every event it should.
// Unlike the fan-out rows (a fixed write rate, per-event latency), it
// measures throughput, and it has watchers of every pod and per-watcher
// encoding, which the fan-out rows do not.
type dispatchScenario struct {
	name string
	// watchers is how many watches are open.
	watchers int
	// byNode: watcher j selects spec.nodeName=node(j % Nodes) (through the
	// caches' trigger index); otherwise every watcher sees every pod.
	byNode bool
	// updates is how many pod updates are written, update i to pod
	// i % Pods, so they spread round-robin over nodes.
	updates int
	// batch is how many updates are written per round; a round ends when
	// every watcher has received its events of the round. Rounds keep the
	// in-flight events per watcher below both caches' buffers, so that the
	// measure is dispatch throughput, not which cache tolerates bursts.
	batch int
	// encode: each watcher encodes every object it receives with the pods'
	// storage codec (protobuf), as the apiserver's watch handler encodes
	// per client; upstream's cacher shares one encoding between watchers.
	encode bool
}

// expectedFor is how many MODIFIED events an update of pod i produces.
func (sc dispatchScenario) expectedFor(sh Shape, i int) int64 {
	if !sc.byNode {
		return int64(sc.watchers)
	}
	// Watchers on i's node: those j < watchers with j%Nodes == i%Nodes.
	n := int64(sc.watchers / sh.Nodes)
	if i%sh.Nodes < sc.watchers%sh.Nodes {
		n++
	}
	return n
}

// dispatchResult is one run of a dispatch scenario.
type dispatchResult struct {
	eventsPerSec float64
	writeSecs    float64 // time spent writing updates to etcd (sum over rounds)
	totalSecs    float64 // first write to last delivery
	terminated   int64   // watchers closed before receiving everything
	// undelivered is how many expected events had not arrived when the
	// two-minute deadline passed (0 when every round completed).
	undelivered int64
	// errors counts watch error events and objects that did not decode or
	// encode; firstError is the first of them.
	errors     int64
	firstError string
}

// measureDispatch opens the scenario's watchers on b from etcd's current
// revision, then writes the updates in rounds of sc.batch concurrent
// writes, each round waiting until every watcher received its events (or a
// two-minute deadline passes).
func (e *Env) measureDispatch(ctx context.Context, b *podBackend, sc dispatchScenario) (dispatchResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := genericapirequest.WithNamespace(ctx, metav1.NamespaceAll)
	rv, err := e.currentRev(ctx)
	if err != nil {
		return dispatchResult{}, err
	}
	// A consistent LIST returns once the cache has seen rv, so that
	// watches from rv start now rather than waiting for it.
	if _, err := b.store.List(all, &metainternalversion.ListOptions{FieldSelector: nodeSelector(0)}); err != nil {
		return dispatchResult{}, fmt.Errorf("storage: %s: %w", b.name, err)
	}
	var (
		got        atomic.Int64
		target     atomic.Int64
		reached    = make(chan struct{}, 1)
		terminated atomic.Int64
		errs       atomic.Int64
		firstErr   report.FirstError
		wg         sync.WaitGroup
	)
	fail := func(msg string) { errs.Add(1); firstErr.Set(msg) }
	target.Store(1 << 62)
	watches := make([]watch.Interface, 0, sc.watchers)
	defer func() {
		cancel()
		for _, wi := range watches {
			wi.Stop()
		}
		wg.Wait()
	}()
	for j := range sc.watchers {
		o := &metainternalversion.ListOptions{ResourceVersion: strconv.FormatInt(rv, 10), FieldSelector: fields.Everything()}
		if sc.byNode {
			o.FieldSelector = nodeSelector(j % e.Shape.Nodes)
		}
		wi, err := b.store.Watch(all, o)
		if err != nil {
			return dispatchResult{}, fmt.Errorf("storage: %s watch: %w", b.name, err)
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
					fail(fmt.Sprintf("watch error event: %v", ev.Object))
					continue
				default:
					continue
				}
				if sc.encode {
					buf.Reset()
					if err := e.podCodec.Encode(ev.Object, &buf); err != nil {
						fail(fmt.Sprintf("encode: %v", err))
					}
				} else if _, err := meta.Accessor(ev.Object); err != nil {
					fail(fmt.Sprintf("event object %T: %v", ev.Object, err))
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
		written = make(chan error, batch)
		res     dispatchResult
	)
	start := time.Now()
rounds:
	for first := 0; first < sc.updates; first += batch {
		last := min(first+batch, sc.updates)
		for i := first; i < last; i++ {
			want += sc.expectedFor(e.Shape, i%e.Shape.Pods)
		}
		target.Store(want)
		ws := time.Now()
		for i := first; i < last; i++ {
			go func() { written <- e.PutPod(ctx, i%e.Shape.Pods, 0) }()
		}
		var werr error
		for i := first; i < last; i++ {
			if err := <-written; err != nil && werr == nil {
				werr = err
			}
		}
		if werr != nil {
			return res, werr
		}
		writing += time.Since(ws)
		for got.Load() < want {
			select {
			case <-reached:
			case <-deadline.C:
				res.undelivered = want - got.Load()
				break rounds
			}
		}
	}
	total := time.Since(start)
	cancel()
	for _, wi := range watches {
		wi.Stop()
	}
	watches = nil
	wg.Wait()
	res.eventsPerSec = float64(got.Load()) / total.Seconds()
	res.writeSecs = writing.Seconds()
	res.totalSecs = total.Seconds()
	res.terminated = terminated.Load()
	res.errors, res.firstError = errs.Load(), firstErr.Get()
	return res, nil
}
