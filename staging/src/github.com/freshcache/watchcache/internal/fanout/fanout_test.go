package fanout

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/metrics"
)

type countingRecorder struct {
	metrics.Discard
	slow, relist, other atomic.Int64
	watchers            atomic.Int64
}

func (c *countingRecorder) WatcherTerminated(reason string) {
	switch reason {
	case metrics.ReasonSlow:
		c.slow.Add(1)
	case metrics.ReasonRelist:
		c.relist.Add(1)
	default:
		c.other.Add(1)
	}
}

// TestTerminationReasons: a relist counts its closed watchers under
// reason=relist; a shutdown closes watchers without counting them, so the
// metric never carries an empty reason.
func TestTerminationReasons(t *testing.T) {
	rec := &countingRecorder{}
	f := newTestFanout(rec, 8)
	ctx := context.Background()
	a := f.Add(Spec{Ctx: ctx, Key: "/p/", Recursive: true, Predicate: storage.Everything})
	f.TerminateAll(metrics.ReasonRelist)
	b := f.Add(Spec{Ctx: ctx, Key: "/p/", Recursive: true, Predicate: storage.Everything})
	f.TerminateAll("")
	for name, w := range map[string]*Watcher{"relisted": a, "shut down": b} {
		select {
		case <-w.done:
		default:
			t.Errorf("the %s watcher is still open", name)
		}
	}
	if rec.relist.Load() != 1 || rec.other.Load() != 0 {
		t.Fatalf("terminations counted: relist=%d other=%d, want 1 and 0", rec.relist.Load(), rec.other.Load())
	}
}
func (c *countingRecorder) WatchersDelta(d int) { c.watchers.Add(int64(d)) }

func event(rv uint64, key, node string) *history.Event {
	p := &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: key, ResourceVersion: "1"}, Spec: example.PodSpec{NodeName: node}}
	o := &store.Object{Key: key, Obj: p, RV: rv}
	return &history.Event{Type: watch.Added, Object: o, RV: rv}
}

func newTestFanout(rec metrics.Recorder, queue int) *Fanout {
	return New(Config{
		Versioner:     storage.APIObjectVersioner{},
		NewFunc:       func() runtime.Object { return &example.Pod{} },
		TriggerFunc:   func(o runtime.Object) string { return o.(*example.Pod).Spec.NodeName },
		QueueCapacity: queue,
		ResultBuffer:  1,
		Metrics:       rec,
	})
}

func TestSlowWatcherIsTerminatedOthersContinue(t *testing.T) {
	rec := &countingRecorder{}
	f := newTestFanout(rec, 2)
	ctx := context.Background()
	slow := f.Add(Spec{Ctx: ctx, Key: "/p/", Recursive: true, Predicate: storage.Everything})
	fast := f.Add(Spec{Ctx: ctx, Key: "/p/", Recursive: true, Predicate: storage.Everything})
	got := make(chan watch.Event, 100)
	go func() {
		for ev := range fast.ResultChan() {
			got <- ev
		}
		close(got)
	}()
	for rv := uint64(1); rv <= 20; rv++ {
		f.Dispatch(event(rv, "/p/a", ""))
		// Let the fast reader keep up; the slow one never reads.
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("fast watcher stalled at %d", rv)
		}
	}
	// The slow watcher's channel closes after its buffered events.
	deadline := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-slow.ResultChan():
		case <-deadline:
			t.Fatal("slow watcher was not terminated")
		}
	}
	if rec.slow.Load() != 1 {
		t.Fatalf("terminated slow watchers = %d, want 1", rec.slow.Load())
	}
	fast.Stop()
	for range got {
	}
}

func TestTriggerRoutesOnlyMatchingEvents(t *testing.T) {
	f := newTestFanout(&countingRecorder{}, 10)
	n1 := "n1"
	pred := storage.Everything
	w := f.Add(Spec{Ctx: context.Background(), Key: "/p/", Recursive: true, Predicate: pred, Trigger: &n1})
	defer w.Stop()
	f.Dispatch(event(1, "/p/a", "n2"))
	f.Dispatch(event(2, "/p/b", "n1"))
	select {
	case ev := <-w.ResultChan():
		if ev.Object.(*Shared).GetName() != "/p/b" {
			t.Fatalf("got %v, want only the n1 pod", ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
}

func TestStartRVSkipsOldEventsAndBookmarkMarksInitialEnd(t *testing.T) {
	f := newTestFanout(&countingRecorder{}, 10)
	pred := storage.Everything
	pred.AllowWatchBookmarks = true
	w := f.Add(Spec{Ctx: context.Background(), Key: "/p/", Recursive: true, Predicate: pred, StartRV: 5, InitialEventsEnd: true})
	defer w.Stop()
	f.Dispatch(event(5, "/p/old", ""))
	f.Dispatch(event(6, "/p/new", ""))
	want := []watch.EventType{watch.Bookmark, watch.Added}
	for i, typ := range want {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != typ {
				t.Fatalf("event %d: %s, want %s", i, ev.Type, typ)
			}
			if typ == watch.Bookmark {
				m, _ := ev.Object.(*example.Pod)
				if m.Annotations[metav1.InitialEventsAnnotationKey] != "true" || m.ResourceVersion != "5" {
					t.Fatalf("bookmark %+v", m.ObjectMeta)
				}
			} else if ev.Object.(*Shared).GetName() != "/p/new" {
				t.Fatalf("got %v", ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d missing", i)
		}
	}
}
