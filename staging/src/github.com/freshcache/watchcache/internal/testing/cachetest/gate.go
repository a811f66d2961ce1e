package cachetest

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// Gate wraps the etcd3 store under a cache. While paused, events and
// progress notifications of the watches opened through it (the cache's
// reflector) are held back, in order, so that a test can keep the cache
// behind etcd deterministically. It counts RequestWatchProgress and Watch
// calls. Everything else passes through.
type Gate struct {
	storage.Interface

	progress atomic.Int64
	// let is how many held events may still pass while paused (Let).
	let     atomic.Int64
	watches atomic.Int64

	mu struct {
		sync.Mutex
		// failLimit and failErr: GetList calls with this page limit fail
		// (FailLists).
		failLimit int64
		failErr   error
		// watches are the open gated watches, for Inject.
		watches map[*gatedWatch]struct{}
		paused  bool
		// open is closed by Resume; a fresh one is made by Pause.
		open chan struct{}
		// lets is closed, and replaced, by every Let: it wakes the
		// watches whose next event waits while paused.
		lets chan struct{}
	}
}

// NewGate returns an open Gate over s.
func NewGate(s storage.Interface) *Gate {
	g := &Gate{Interface: s}
	g.mu.open = make(chan struct{})
	close(g.mu.open)
	g.mu.lets = make(chan struct{})
	return g
}

// Pause holds back every watch event received from now on.
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.mu.paused {
		g.mu.paused = true
		g.mu.open = make(chan struct{})
	}
}

// Resume lets held events through. Idempotent.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.paused {
		g.mu.paused = false
		close(g.mu.open)
	}
}

// FailLists makes every GetList whose page limit is limit (the cache's
// ListPageSize: its reflector's lists) fail with err; a nil err ends it.
func (g *Gate) FailLists(limit int64, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.failLimit, g.mu.failErr = limit, err
}

// GetList forwards, unless FailLists says otherwise.
func (g *Gate) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	g.mu.Lock()
	limit, err := g.mu.failLimit, g.mu.failErr
	g.mu.Unlock()
	if err != nil && opts.Predicate.Limit == limit {
		return err
	}
	return g.Interface.GetList(ctx, key, opts, listObj)
}

// Inject delivers ev to every open watch through the gate, ahead of what
// etcd sends next, even while paused: e.g. the ERROR event etcd3 sends
// for a compaction or a lost leader.
func (g *Gate) Inject(ev watch.Event) {
	g.mu.Lock()
	ws := make([]*gatedWatch, 0, len(g.mu.watches))
	for w := range g.mu.watches {
		ws = append(ws, w)
	}
	g.mu.Unlock()
	for _, w := range ws {
		select {
		case w.inject <- ev:
		case <-w.done:
		}
	}
}

// Let lets the next n events (or notifications) through while paused,
// e.g. the first event of a transaction without the rest, including one
// that is held already.
func (g *Gate) Let(n int) {
	g.let.Add(int64(n))
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.mu.lets)
	g.mu.lets = make(chan struct{})
}

// ProgressRequests is the number of RequestWatchProgress calls so far.
func (g *Gate) ProgressRequests() int64 { return g.progress.Load() }

// Watches is the number of watches opened on etcd through the gate so far:
// the cache's reflector's, and any the cache opened for a client.
func (g *Gate) Watches() int64 { return g.watches.Load() }

// RequestWatchProgress counts and forwards.
func (g *Gate) RequestWatchProgress(ctx context.Context) error {
	g.progress.Add(1)
	return g.Interface.RequestWatchProgress(ctx)
}

// takeLet uses one of Let's passes, if any is left.
func (g *Gate) takeLet() bool {
	for {
		n := g.let.Load()
		if n <= 0 {
			return false
		}
		if g.let.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// pass blocks until an event may pass: the gate is open, or a Let lets
// it through. False: done was closed first.
func (g *Gate) pass(done <-chan struct{}) bool {
	for {
		g.mu.Lock()
		open, lets := g.mu.open, g.mu.lets
		g.mu.Unlock()
		select {
		case <-open:
			return true
		default:
		}
		if g.takeLet() {
			return true
		}
		select {
		case <-open:
			return true
		case <-lets:
		case <-done:
			return false
		}
	}
}

// Watch forwards the store's watch through the gate.
func (g *Gate) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	g.watches.Add(1)
	w, err := g.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	gw := &gatedWatch{forwardingWatch: newForwardingWatch(w), inject: make(chan watch.Event)}
	g.mu.Lock()
	if g.mu.watches == nil {
		g.mu.watches = map[*gatedWatch]struct{}{}
	}
	g.mu.watches[gw] = struct{}{}
	g.mu.Unlock()
	go func() {
		defer func() {
			g.mu.Lock()
			delete(g.mu.watches, gw)
			g.mu.Unlock()
		}()
		defer close(gw.out)
		for {
			var ev watch.Event
			select {
			case ev = <-gw.inject:
				if !gw.send(ev) {
					return
				}
				continue
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				ev = e
			case <-gw.done:
				return
			}
			// Checked after the event arrived: an event of a write made
			// after Pause returned is always held.
			if !g.pass(gw.done) {
				return
			}
			if !gw.send(ev) {
				return
			}
		}
	}()
	return gw, nil
}

type gatedWatch struct {
	*forwardingWatch
	inject chan watch.Event
}
