package cluster

// The churn's pods as a watch on the first apiserver sees them: when each
// was first seen bound to a node and first seen Running. Pod status
// timestamps have whole seconds only (metav1.Time), too coarse for a
// latency of a second or less; both instants here come from one watch, so
// its delivery delay cancels out of their difference except for how it
// varies. The status's own figure (PodScheduled's transition to the
// container's startedAt) is kept beside it, in whole seconds.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/freshcache/freshcache/tools/bench/quantile"
)

type podWatch struct {
	stop chan struct{}
	mu   struct {
		sync.Mutex
		bound, running map[types.UID]time.Time
		// fromStatus is startedAt - PodScheduled's transition, per pod.
		fromStatus map[types.UID]time.Duration
		created    []time.Time // first seen, after the initial list
		deleted    []time.Time
	}
}

func startPodWatch(ctx context.Context, cs kubernetes.Interface) (*podWatch, error) {
	w := &podWatch{stop: make(chan struct{})}
	w.mu.bound, w.mu.running, w.mu.fromStatus = map[types.UID]time.Time{}, map[types.UID]time.Time{}, map[types.UID]time.Duration{}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(clusterNamespace))
	inf := f.Core().V1().Pods().Informer()
	synced := false
	see := func(obj any, created bool) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Labels[churnLabel] == "" {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if created && synced {
			w.mu.created = append(w.mu.created, now)
		}
		if _, ok := w.mu.bound[p.UID]; !ok && p.Spec.NodeName != "" {
			w.mu.bound[p.UID] = now
		}
		if _, ok := w.mu.running[p.UID]; !ok && p.Status.Phase == corev1.PodRunning {
			w.mu.running[p.UID] = now
			if d, ok := statusStartLatency(p); ok {
				w.mu.fromStatus[p.UID] = d
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { see(o, true) },
		UpdateFunc: func(_, o any) { see(o, false) },
		DeleteFunc: func(any) {
			w.mu.Lock()
			w.mu.deleted = append(w.mu.deleted, time.Now())
			w.mu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	go inf.Run(w.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(w.stop)
		return nil, errors.New("cluster: the pod watch did not sync")
	}
	w.mu.Lock()
	synced = true
	w.mu.Unlock()
	return w, nil
}

func (w *podWatch) close() { close(w.stop) }

// latency is bound-to-Running of the pods first seen bound in [from, to].
func (w *podWatch) latency(from, to time.Time) PodLatency {
	w.mu.Lock()
	defer w.mu.Unlock()
	var d, st []time.Duration
	for uid, b := range w.mu.bound {
		r, ok := w.mu.running[uid]
		if ok && !b.Before(from) && !b.After(to) {
			d = append(d, r.Sub(b))
			if s, ok := w.mu.fromStatus[uid]; ok {
				st = append(st, s)
			}
		}
	}
	slices.Sort(d)
	slices.Sort(st)
	return PodLatency{Count: len(d), P50Ms: ms(quantile.Percentile(d, 50)), P99Ms: ms(quantile.Percentile(d, 99)),
		StatusCount: len(st), StatusP50S: quantile.Percentile(st, 50).Seconds(), StatusP99S: quantile.Percentile(st, 99).Seconds()}
}

// statusStartLatency is the pod's first container's startedAt less its
// PodScheduled condition's transition: whole seconds, from the status.
func statusStartLatency(p *corev1.Pod) (time.Duration, bool) {
	var scheduled time.Time
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			scheduled = c.LastTransitionTime.Time
		}
	}
	if scheduled.IsZero() || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
		return 0, false
	}
	return p.Status.ContainerStatuses[0].State.Running.StartedAt.Sub(scheduled), true
}

// counts are the pods created and deleted in [from, to].
func (w *podWatch) counts(from, to time.Time) (created, deleted int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := func(ts []time.Time) int {
		n := 0
		for _, t := range ts {
			if !t.Before(from) && !t.After(to) {
				n++
			}
		}
		return n
	}
	return in(w.mu.created), in(w.mu.deleted)
}
