package fanout

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/store"
)

// item is one entry of a watcher's queue: an event, or a bookmark at a
// revision.
type item struct {
	ev *history.Event
	// obj, if set, is ev.Object shared by every watcher of this dispatch.
	obj      *Shared
	bookmark uint64
}

// Watcher is one client watch. It implements watch.Interface.
type Watcher struct {
	f    *Fanout
	spec Spec

	result chan watch.Event
	// wake has room for one pending wake-up; enqueue never blocks on it.
	wake chan struct{}
	// done is closed by Stop or terminate; the goroutine then exits.
	done     chan struct{}
	doneOnce sync.Once

	// nextBookmark is guarded by Fanout.mu.
	nextBookmark time.Time

	mu struct {
		sync.Mutex
		// queue holds the items dispatched but not yet taken by the goroutine.
		queue []item
	}
}

var _ watch.Interface = (*Watcher)(nil)

func newWatcher(f *Fanout, spec Spec) *Watcher {
	return &Watcher{
		f:      f,
		spec:   spec,
		result: make(chan watch.Event, f.cfg.ResultBuffer),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

// ResultChan implements watch.Interface.
func (w *Watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface. Events already in the result channel stay
// readable; the channel is closed once the goroutine has exited.
func (w *Watcher) Stop() {
	w.f.remove(w)
	w.doneOnce.Do(func() { close(w.done) })
}

// terminate closes the watcher. A non-empty reason counts it in the
// terminated-watchers metric; "" (the cache shutting down) does not, so the
// metric's reason label is never empty.
func (w *Watcher) terminate(reason string) {
	w.doneOnce.Do(func() {
		if reason != "" {
			w.f.cfg.Metrics.WatcherTerminated(reason)
		}
		close(w.done)
	})
}

// enqueue adds it unless the queue is full. It reports false for a slow
// watcher.
func (w *Watcher) enqueue(it item) bool {
	w.mu.Lock()
	if len(w.mu.queue) >= w.f.cfg.QueueCapacity {
		w.mu.Unlock()
		return false
	}
	w.mu.queue = append(w.mu.queue, it)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// maxSpareQueue is the largest queue buffer a watcher keeps for reuse; a
// burst's bigger buffer is dropped so that idle watchers stay small.
const maxSpareQueue = 64

// take returns the queued items and installs spare (the buffer of the
// previous take, now processed) as the new queue. Reusing the two buffers
// in turn saves an allocation per wake-up, which for a watcher that gets
// one event at a time is one allocation per delivered event.
func (w *Watcher) take(spare []item) []item {
	clear(spare) // drop references to delivered events
	if cap(spare) > maxSpareQueue {
		spare = nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.mu.queue
	w.mu.queue = spare[:0]
	return q
}

// bookmarkAfter is when the next periodic bookmark is due, or zero when the
// watch ends before one would help. Called under Fanout.mu.
func (w *Watcher) bookmarkAfter(now time.Time) time.Time {
	next := now.Add(w.f.cfg.BookmarkFrequency)
	deadline, ok := w.spec.Ctx.Deadline()
	if !ok {
		return next
	}
	if pre := deadline.Add(-preDeadline); pre.Before(next) {
		next = pre
	}
	if next.Before(now) {
		return time.Time{}
	}
	return next
}

func (w *Watcher) run() {
	defer func() {
		w.f.remove(w)
		w.f.cfg.Metrics.WatchersDelta(-1)
		close(w.result)
	}()
	if !w.sendInitial() {
		return
	}
	utilflowcontrol.WatchInitialized(w.spec.Ctx)
	var batch []item
	for {
		select {
		case <-w.done:
			return
		case <-w.spec.Ctx.Done():
			return
		case <-w.wake:
		}
		batch = w.take(batch)
		for _, it := range batch {
			var ok bool
			if it.ev != nil {
				ok = w.deliver(it.ev, it.obj)
			} else {
				ok = w.sendBookmark(it.bookmark, false)
			}
			if !ok {
				return
			}
		}
	}
}

func (w *Watcher) sendInitial() bool {
	if s := w.spec.Initial; s != nil {
		ok := true
		visit := func(o *store.Object) bool {
			if !w.matches(o) {
				return true
			}
			ok = w.send(watch.Event{Type: watch.Added, Object: shareOrCopy(o.Obj)})
			return ok
		}
		if w.spec.Recursive {
			s.Range(w.spec.Key, store.PrefixEnd(w.spec.Key), visit)
		} else if o, found := s.Get(w.spec.Key); found {
			visit(o)
		}
		w.spec.Initial = nil
		if !ok {
			return false
		}
	}
	for i := range w.spec.Backlog {
		if !w.deliver(&w.spec.Backlog[i], nil) {
			return false
		}
	}
	w.spec.Backlog = nil
	if w.spec.InitialEventsEnd {
		return w.sendBookmark(w.spec.StartRV, true)
	}
	return true
}

func (w *Watcher) matches(o *store.Object) bool {
	if w.spec.Recursive {
		if !strings.HasPrefix(o.Key, w.spec.Key) {
			return false
		}
	} else if o.Key != w.spec.Key {
		return false
	}
	return store.Selects(&w.spec.Predicate, o)
}

// deliver converts ev for this watcher (an object that starts or stops
// matching becomes ADDED or DELETED) and sends it. shared, if set, is
// ev.Object as shared by the other watchers of the same dispatch.
func (w *Watcher) deliver(ev *history.Event, shared *Shared) bool {
	cur := ev.Type != watch.Deleted && w.matches(ev.Object)
	var prev bool
	switch {
	case ev.Type == watch.Deleted:
		prev = w.matches(ev.Object)
	case ev.Prev != nil:
		prev = w.matches(ev.Prev)
	}
	object := func() runtime.Object {
		if shared != nil {
			return shared
		}
		return shareOrCopy(ev.Object.Obj)
	}
	switch {
	case cur && !prev:
		return w.send(watch.Event{Type: watch.Added, Object: object()})
	case cur && prev:
		return w.send(watch.Event{Type: watch.Modified, Object: object()})
	case prev && ev.Type == watch.Deleted:
		return w.send(watch.Event{Type: watch.Deleted, Object: object()})
	case prev:
		// It stopped matching: the client sees the old version go away at
		// the event's revision.
		obj := ev.Prev.Obj.DeepCopyObject()
		if err := w.f.cfg.Versioner.UpdateObject(obj, ev.RV); err != nil {
			utilruntime.HandleError(fmt.Errorf("watchcache: setting resourceVersion %d: %w", ev.RV, err))
		}
		return w.send(watch.Event{Type: watch.Deleted, Object: obj})
	}
	return true
}

func (w *Watcher) sendBookmark(rv uint64, initialEnd bool) bool {
	if rv < w.spec.StartRV {
		// A bookmark may not precede what the watcher already received.
		return true
	}
	obj := w.f.cfg.NewFunc()
	if err := w.f.cfg.Versioner.UpdateObject(obj, rv); err != nil {
		utilruntime.HandleError(fmt.Errorf("watchcache: bookmark at %d: %w", rv, err))
		return true
	}
	if initialEnd {
		if err := storage.AnnotateInitialEventsEndBookmark(obj); err != nil {
			utilruntime.HandleError(fmt.Errorf("watchcache: initial-events-end bookmark: %w", err))
			return true
		}
	}
	return w.send(watch.Event{Type: watch.Bookmark, Object: obj})
}

func (w *Watcher) send(ev watch.Event) bool {
	// Prefer stopping over sending once the watcher is done.
	select {
	case <-w.done:
		return false
	case <-w.spec.Ctx.Done():
		return false
	default:
	}
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	case <-w.spec.Ctx.Done():
		return false
	}
}

// ErrorWatcher returns a watch that delivers err as one ERROR event and
// closes, as upstream does for errors found after the request was admitted.
func ErrorWatcher(err error) watch.Interface {
	var obj runtime.Object
	switch e := err.(type) {
	case apierrors.APIStatus:
		st := e.Status()
		obj = &st
	default:
		obj = &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: err.Error(),
			Reason:  metav1.StatusReasonInternalError,
			Code:    http.StatusInternalServerError,
		}
	}
	ch := make(chan watch.Event, 1)
	ch <- watch.Event{Type: watch.Error, Object: obj}
	close(ch)
	return closedWatcher(ch)
}

// ClosedWatcher returns a watch whose channel is already closed.
func ClosedWatcher() watch.Interface {
	ch := make(chan watch.Event)
	close(ch)
	return closedWatcher(ch)
}

type closedWatcher chan watch.Event

func (c closedWatcher) ResultChan() <-chan watch.Event { return c }
func (c closedWatcher) Stop()                          {}
