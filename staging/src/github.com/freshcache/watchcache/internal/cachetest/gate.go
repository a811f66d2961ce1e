package cachetest

import (
	"context"
	"sync"
	"sync/atomic"

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
	watches  atomic.Int64

	mu struct {
		sync.Mutex
		paused bool
		// open is closed by Resume; a fresh one is made by Pause.
		open chan struct{}
	}
}

// NewGate returns an open Gate over s.
func NewGate(s storage.Interface) *Gate {
	g := &Gate{Interface: s}
	g.mu.open = make(chan struct{})
	close(g.mu.open)
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

func (g *Gate) openCh() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.open
}

// Watch forwards the store's watch through the gate.
func (g *Gate) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	g.watches.Add(1)
	w, err := g.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	gw := &gatedWatch{inner: w, out: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(gw.out)
		for ev := range w.ResultChan() {
			// Checked after the event arrived: an event of a write made
			// after Pause returned is always held.
			select {
			case <-g.openCh():
			case <-gw.done:
				return
			}
			select {
			case gw.out <- ev:
			case <-gw.done:
				return
			}
		}
	}()
	return gw, nil
}

type gatedWatch struct {
	inner watch.Interface
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
}

func (w *gatedWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.inner.Stop()
	})
}

func (w *gatedWatch) ResultChan() <-chan watch.Event { return w.out }
