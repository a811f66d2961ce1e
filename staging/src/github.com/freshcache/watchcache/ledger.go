package watchcache

// Catching up on the ledger of own writes (ProgressFromOwnWrites). When a
// read's revision R arrives (a fetch answers it, or a NotOlderThan read
// such as a bounded rv=0 one brings it) and the cache is at c < R, the
// driver asks the cache to settle first: if every revision in (c, R] is
// this process's write of a key outside the resource (oracle.Ledger), the
// resource did not change in between, and the state moves to R as a progress
// notification would move it. Otherwise the Machine asks etcd for progress
// as before.

import (
	"context"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/oracle"
)

// etcdKey is the etcd key the etcd3 store writes for key: the storage
// root, then key without its leading "/". "" if the store would refuse
// key, or the cache keeps no ledger.
func (c *Cache) etcdKey(key string) string {
	prepared, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil || c.storageRoot == "" {
		return ""
	}
	return c.storageRoot + strings.TrimPrefix(prepared, "/")
}

// settle brings the state to rev without a progress request when the
// ledger proves nothing of the resource changed since it. While the proof
// is pending (writes of this process in flight may fill a gap, or an
// event of the resource's own write is still on its way) it waits, at
// most reflector.OwnWriteGrace, for the ledger or the state to move. It
// runs in the driver's fetch goroutine or a NotOlderThan read's, before
// the Machine hears of rev, and holds no lock while it waits.
func (c *Cache) settle(ctx context.Context, rev int64) {
	var grace <-chan time.Time
	for {
		// Both channels before the state and the proof they guard.
		moved, changed := c.stateMoved(), c.ledger.Changed()
		have := c.RV()
		if rev <= int64(have) || !c.Ready() {
			return
		}
		switch c.ledger.Prove(c.etcdPrefix, int64(have), rev) {
		case oracle.Proven:
			c.advance(uint64(rev))
			return
		case oracle.Unproven:
			return
		}
		if grace == nil {
			t := c.opts.Clock.NewTimer(reflector.OwnWriteGrace)
			defer t.Stop()
			grace = t.C()
		}
		select {
		case <-changed:
		case <-moved:
		case <-grace:
			return
		case <-ctx.Done():
			return
		}
	}
}

// catchUp is settle without the wait, for the reflector goroutine: once
// an event is applied while reads still wait for target, the revisions
// left between may all be other resources' own writes.
func (c *Cache) catchUp(target int64) {
	if c.ledger == nil {
		return
	}
	if c.ledger.Prove(c.etcdPrefix, int64(c.RV()), target) == oracle.Proven {
		c.advance(uint64(target))
	}
}

// advance moves the state to rv, which the ledger proved nothing of the
// resource wrote since the state's revision, and tells the Machine as a
// progress notification would (without ending a progress request).
func (c *Cache) advance(rv uint64) {
	c.mu.Lock()
	moved := c.readiness.IsReady() && c.advanceLocked(rv)
	c.mu.Unlock()
	if !moved {
		return
	}
	c.metrics.AdvancedByOwnWrites()
	c.signalApplied()
	c.driver.Advanced(rv)
}

// stateMoved returns a channel that is closed when the published state
// next moves. Take it before reading the state.
func (c *Cache) stateMoved() <-chan struct{} {
	c.moved.Lock()
	defer c.moved.Unlock()
	if c.moved.ch == nil {
		c.moved.ch = make(chan struct{})
	}
	return c.moved.ch
}

// signalApplied wakes every settle waiting for the state to move.
func (c *Cache) signalApplied() {
	if c.ledger == nil {
		return
	}
	c.moved.Lock()
	if c.moved.ch != nil {
		close(c.moved.ch)
		c.moved.ch = nil
	}
	c.moved.Unlock()
}
