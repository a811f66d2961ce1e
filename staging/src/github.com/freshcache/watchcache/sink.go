package watchcache

// The reflector's side of the cache: how a list or a revision of events
// becomes the next immutable snapshot, and how progress moves it.

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/metrics"
)

// sink is the reflector's view of the cache. Its methods run on the
// reflector goroutine only.
type sink Cache

func (s *sink) RV() uint64 { return (*Cache)(s).RV() }

func (s *sink) Replace(objs []runtime.Object, rv uint64, reason string) error {
	if err := s.replace(objs, rv, reason); err != nil {
		return err
	}
	// After publication: a read released at rv takes a snapshot >= rv.
	s.driver.Applied(rv)
	return nil
}

func (s *sink) replace(objs []runtime.Object, rv uint64, reason string) error {
	c := (*Cache)(s)
	items := make([]*store.Object, 0, len(objs))
	for _, obj := range objs {
		orv, err := c.cfg.Versioner.ObjectResourceVersion(obj)
		if err != nil {
			return err
		}
		o, err := c.newObject(obj, orv)
		if err != nil {
			return err
		}
		items = append(items, o)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.mu.writer.Reset(items, rv); err != nil {
		return err
	}
	snap := c.mu.writer.Snapshot()
	if c.mu.listed > 0 {
		// Watchers cannot be told what changed while the cache was not
		// watching; they re-watch, as with upstream's cacher. Unready has
		// closed them already; this catches a relist without it.
		c.fanout.TerminateAll(metrics.ReasonRelist)
	}
	c.mu.listed++
	c.history.Reset(snap)
	c.fanout.Reset(rv)
	c.publishLocked(snap)
	c.metrics.Relisted(reason)
	c.readiness.Set(true, nil)
	return nil
}

func (s *sink) Unready(err error) {
	c := (*Cache)(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readiness.Set(false, err) {
		// As upstream's cacher before it relists: the watchers would get
		// nothing until the list is in, and then only an error.
		c.fanout.TerminateAll(metrics.ReasonRelist)
	}
}

func (s *sink) Apply(rv uint64, evs []reflector.Event) error {
	if err := s.apply(rv, evs); err != nil {
		return err
	}
	c := (*Cache)(s)
	if target := s.driver.Applied(rv); target > int64(rv) {
		c.catchUp(target)
	}
	c.signalApplied()
	return nil
}

// apply makes the events of revision rv one change of the state: one
// snapshot after all of them, history events that share it, one dispatch.
// A reader never sees part of an etcd transaction (unless progress is
// untrusted, when the reflector hands over events one at a time).
func (s *sink) apply(rv uint64, evs []reflector.Event) error {
	c := (*Cache)(s)
	objs := make([]*store.Object, len(evs))
	for i, e := range evs {
		o, err := c.newObject(e.Object, rv)
		if err != nil {
			return err
		}
		objs[i] = o
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rv < c.mu.writer.RV() {
		return fmt.Errorf("watchcache: events at %d behind the state at %d", rv, c.mu.writer.RV())
	}
	hevs := make([]history.Event, len(evs))
	for i, e := range evs {
		o := objs[i]
		var prev *store.Object
		typ := e.Type
		switch typ {
		case watch.Deleted:
			prev = c.mu.writer.Delete(o.Key, rv)
		case watch.Added, watch.Modified:
			var err error
			prev, err = c.mu.writer.Put(o)
			if err != nil {
				// The state holds part of the revision; only a relist
				// can repair it, and nothing of it was published.
				return err
			}
			typ = watch.Modified
			if prev == nil {
				typ = watch.Added
			}
		default:
			return fmt.Errorf("watchcache: unexpected event type %q", typ)
		}
		hevs[i] = history.Event{Type: typ, Object: o, Prev: prev, RV: rv}
	}
	snap := c.mu.writer.Snapshot()
	ptrs := make([]*history.Event, len(hevs))
	for i := range hevs {
		hevs[i].Snapshot = snap
		ptrs[i] = &hevs[i]
	}
	if err := c.history.Append(hevs...); err != nil {
		return err
	}
	c.fanout.Dispatch(ptrs...)
	c.publishLocked(snap)
	c.metrics.EventsReceived(len(evs))
	return nil
}

func (s *sink) Progress(rv uint64) {
	c := (*Cache)(s)
	if rv > c.RV() {
		c.mu.Lock()
		c.advanceLocked(rv)
		c.mu.Unlock()
		c.signalApplied()
	}
	c.driver.ProgressNotified(rv)
}

// advanceLocked moves the state, with no change, to revision rv, which
// nothing of the resource changed since the state's revision, and tells
// the watchers. It does nothing if the state is at rv or later: a caller
// other than the reflector (settle) may come after the reflector moved it.
func (c *Cache) advanceLocked(rv uint64) bool {
	if rv <= c.mu.writer.RV() {
		return false
	}
	c.mu.writer.Advance(rv)
	c.fanout.Progress(rv)
	c.history.Tick()
	c.publishLocked(c.latest.Load().AtRV(rv))
	return true
}
