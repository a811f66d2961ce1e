package robustness

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// watcher is an informer-like client: LIST, then WATCH from the list's RV
// with bookmarks and a short timeout, resuming from the last RV received
// after every break (on either cache); a 410 Gone starts a new chain with a
// new LIST.
type watcher struct {
	actor
	node string // "" watches all pods
	// listMode is how the watcher (re)lists.
	listMode record.ReadMode
}

func (w *watcher) run(ctx context.Context) {
	chain := -1
	var rv int64
	retry := time.NewTicker(100 * time.Millisecond) // paces retries after errors
	defer retry.Stop()
	for ctx.Err() == nil {
		if rv == 0 {
			op := record.Op{Client: w.id, Cache: w.cur, Kind: record.List, Mode: w.listMode, Node: w.node}
			octx, cancel := context.WithTimeout(ctx, w.tr.OpTimeout)
			end := w.wd.begin(fmt.Sprintf("watcher %d: %s list on cache %d", w.id, w.listMode, w.cur), w.tr.OpTimeout)
			op.Call = w.rec.Now()
			err := w.caches[w.cur].Do(octx, &op)
			op.Return = w.rec.Now()
			end()
			cancel()
			classify(&op, err)
			w.rec.AddOp(op)
			if ctx.Err() != nil {
				return
			}
			if op.Out != record.OK {
				w.nextCache()
				<-retry.C
				continue
			}
			chain++
			rv = op.RV
		}
		sess, gone := w.session(ctx, chain, rv, false)
		if sess == nil {
			// Watch refused: 410 means relist, anything else retry.
			if gone {
				rv = 0
			}
			w.nextCache()
			select {
			case <-ctx.Done():
			case <-retry.C:
			}
			continue
		}
		w.rec.AddSession(*sess)
		if last := lastRV(sess); last > 0 {
			rv = last
		}
		if gone {
			rv = 0
		}
		if w.rng.IntN(3) == 0 {
			w.nextCache() // switch apiservers, as a kubelet may
		}
	}
}

func lastRV(s *record.WatchSession) int64 {
	last := s.StartRV
	for _, e := range s.Events {
		if e.Type != record.Error && e.RV > last {
			last = e.RV
		}
	}
	return last
}

// session runs one Watch from rv until it ends. It returns nil when the
// Watch call itself failed, and whether the failure or end was a 410.
// With slow set, it does not read for slowFor after the start.
func (w *watcher) session(ctx context.Context, chain int, rv int64, slow bool) (*record.WatchSession, bool) {
	cache := w.caches[w.cur]
	timeout := 3*time.Second + time.Duration(w.rng.IntN(4000))*time.Millisecond
	if slow {
		timeout = 2 * slowFor
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The session ends when wctx does: the cache must close the watch.
	end := w.wd.begin(fmt.Sprintf("watcher %d: watch session on cache %d from rv %d", w.id, cache.Index(), rv), timeout)
	defer end()
	sess := &record.WatchSession{Watcher: w.id, Chain: chain, Cache: cache.Index(), Node: w.node, StartRV: rv, Start: w.rec.Now(), Slow: slow}
	wi, err := cache.Watch(wctx, w.node, rv)
	if err != nil {
		return nil, isGone(err)
	}
	defer wi.Stop()
	if slow {
		hold := time.NewTimer(slowFor)
		select {
		case <-hold.C:
		case <-ctx.Done():
			hold.Stop()
		}
	}
	gone := false
	sess.EndReason = "closed"
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-wi.ResultChan():
		case <-ctx.Done():
			ok = false
			sess.EndReason = "stopped"
		}
		if !ok {
			break
		}
		we := record.WatchEvent{Type: record.EventType(ev.Type), Time: w.rec.Now()}
		if ev.Type == watch.Error {
			st := apierrors.FromObject(ev.Object)
			we.Err = st.Error()
			sess.Events = append(sess.Events, we)
			if isGone(st) {
				gone = true
				sess.EndReason = "gone"
			} else {
				sess.EndReason = "error"
			}
			continue
		}
		obj := ev.Object
		if co, ok := obj.(runtime.CacheableObject); ok {
			obj = co.GetObject() // upstream's cacher wraps its objects
		}
		if m, err := meta.Accessor(obj); err == nil {
			we.RV, _ = strconv.ParseInt(m.GetResourceVersion(), 10, 64)
			if ev.Type != watch.Bookmark {
				we.Name, we.Value = m.GetName(), m.GetAnnotations()[ValueAnnotation]
			}
		}
		switch p := obj.(type) {
		case *api.Pod: // in-process storage: internal type
			we.Node = p.Spec.NodeName
		case *corev1.Pod: // client-go
			we.Node = p.Spec.NodeName
		}
		sess.Events = append(sess.Events, we)
	}
	sess.End = w.rec.Now()
	return sess, gone
}

// slowFor is how long the slow watcher does not read.
const slowFor = 4 * time.Second

func isGone(err error) bool {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return true
	}
	var st apierrors.APIStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s
		return st.Status().Code == 410 || st.Status().Reason == metav1.StatusReasonExpired
	}
	return false
}
