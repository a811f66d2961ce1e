package storage

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/freshcache/freshcache/tools/bench/etcdload"
)

// Load is the background write load of a row.
type Load struct {
	// PodWritesPerSec updates random pods (or, when PodTargets is set, pods
	// from that list), stamping AnnotationWritten.
	PodWritesPerSec float64 `json:"pod_writes_per_sec"`
	// LeaseWritesPerSec renews node leases: another resource, so the etcd
	// revision moves without events for pods.
	LeaseWritesPerSec float64 `json:"lease_writes_per_sec"`
	// PodTargets restricts pod writes to these pod indexes.
	PodTargets []int `json:"-"`
}

// Writers is a running Load, until Stop.
type Writers struct {
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	pods, leases etcdload.Counts
	mu           struct {
		sync.Mutex
		err error
	}
}

// StartLoad starts writing l in the background, until the returned
// Writers' Stop (or the end of ctx).
func (e *Env) StartLoad(ctx context.Context, l Load) *Writers {
	ctx, cancel := context.WithCancel(ctx)
	w := &Writers{cancel: cancel}
	run := func(perSec float64, n int, put etcdload.PutFunc, c *etcdload.Counts) {
		if perSec <= 0 {
			return
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			o := etcdload.UpdateOptions{PerSec: perSec, Objects: n, Seed: uint64(time.Now().UnixNano())}
			etcdload.Update(ctx, o, func(ctx context.Context, i int) error {
				err := put(ctx, i)
				if err != nil && ctx.Err() == nil {
					w.mu.Lock()
					if w.mu.err == nil {
						w.mu.err = err
					}
					w.mu.Unlock()
				}
				return err
			}, c)
		}()
	}
	pods, pod := e.Shape.Pods, func(i int) int { return i }
	if len(l.PodTargets) > 0 {
		pods, pod = len(l.PodTargets), func(i int) int { return l.PodTargets[i] }
	}
	run(l.PodWritesPerSec, pods, func(ctx context.Context, i int) error {
		return e.PutPod(ctx, pod(i), time.Now().UnixNano())
	}, &w.pods)
	run(l.LeaseWritesPerSec, e.Shape.Nodes, e.putLease, &w.leases)
	return w
}

// Stop ends the load and returns the number of pod writes done and the
// first write error.
func (w *Writers) Stop() (int64, error) {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	done, _ := w.pods.Load()
	if errors.Is(w.mu.err, context.Canceled) {
		return done, nil
	}
	return done, w.mu.err
}
