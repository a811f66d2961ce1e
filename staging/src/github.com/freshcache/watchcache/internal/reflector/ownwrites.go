package reflector

// The revisions of the apiserver's own writes. The etcd3 store writes one
// key per transaction (Create, GuaranteedUpdate and Delete are each a
// single-key txn), so a revision it wrote holds exactly one event: when the
// watch delivers one event at a revision the cache's own write committed
// at, the revision is whole, and it goes to the sink without waiting for a
// later event or a progress notification (package documentation, "Own
// writes").

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// OwnWriteGrace bounds how long a revision held incomplete waits for the
// answer of a write of the cache's that is in flight (its revision may be
// the held one) before RevisionPending asks for a progress notification.
// etcd sends the write's answer and its watch event together, so the wait
// is usually far shorter; a write that hangs (etcd stalled) costs at most
// this much.
const OwnWriteGrace = 5 * time.Millisecond

// ownWriteRing is how many of the latest own-write revisions are kept.
// Only the newest matter: the one a watch is holding is at most a few
// writes old, since every later event completes it anyway.
const ownWriteRing = 512

// ownWrites is the hand-off of own-write revisions from the goroutines
// that write to the Run goroutine. Writers add under mu and wake Run;
// Run only reads.
type ownWrites struct {
	// inflight counts writes sent and not yet ended.
	inflight atomic.Int64
	// wake is signalled (capacity 1) whenever a write ends.
	wake chan struct{}

	mu   sync.Mutex
	ring []uint64 // allocated on the first write
	next int
}

func (o *ownWrites) add(rv uint64) {
	o.mu.Lock()
	if o.ring == nil {
		o.ring = make([]uint64, ownWriteRing)
	}
	o.ring[o.next] = rv
	o.next = (o.next + 1) % len(o.ring)
	o.mu.Unlock()
}

// has reports whether rv is the revision of one of the latest own writes.
func (o *ownWrites) has(rv uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, w := range o.ring {
		if w == rv {
			return true
		}
	}
	return false
}

// WriteSending tells the reflector that the apiserver is about to send a
// write of one key of the resource to etcd, in a transaction that writes
// that key alone. Every call must be followed by one WriteEnded.
func (r *Reflector) WriteSending() {
	r.own.inflight.Add(1)
}

// WriteEnded ends the write WriteSending announced: rv is the revision
// etcd committed it at, or 0 if etcd did not write it (refused, failed,
// or the attempt was withdrawn). It never blocks.
func (r *Reflector) WriteEnded(rv uint64) {
	if rv > 0 {
		r.own.add(rv)
	}
	r.own.inflight.Add(-1)
	select {
	case r.own.wake <- struct{}{}:
	default:
	}
}

// wholeOwnWrite reports whether a held revision of n events is one the
// cache's own write committed, hence complete.
func (r *Reflector) wholeOwnWrite(rv uint64, n int) bool {
	return n == 1 && r.own.has(rv)
}

// awaitWhole waits, while the watch holds n events of revision rv that
// nothing proves complete, for the next event, or for the write of the
// cache's that committed rv to report it (whole). It calls RevisionPending
// at once unless a write of the cache's is in flight, whose answer may
// name rv; then only after OwnWriteGrace, or once no write is in flight
// and rv was not one of them.
func (r *Reflector) awaitWhole(ctx context.Context, w watch.Interface, rv uint64, n int) (ev watch.Event, ok bool, end watchEnd, whole bool) {
	var grace <-chan time.Time
	if n == 1 && r.own.inflight.Load() > 0 {
		t := r.cfg.Clock.NewTimer(OwnWriteGrace)
		defer t.Stop()
		grace = t.C()
	}
	asked := false
	for {
		if !asked && grace == nil {
			if r.cfg.RevisionPending != nil {
				r.cfg.RevisionPending(rv)
			}
			asked = true
		}
		select {
		case <-ctx.Done():
			return watch.Event{}, false, watchEnd{}, false
		case reason := <-r.relist:
			return watch.Event{}, false, r.relistRequested(reason), false
		case ev, ok := <-w.ResultChan():
			return ev, ok, watchEnd{}, false
		case <-r.own.wake:
			if r.wholeOwnWrite(rv, n) {
				return watch.Event{}, true, watchEnd{}, true
			}
			if r.own.inflight.Load() == 0 {
				grace = nil
			}
		case <-grace:
			grace = nil
		}
	}
}
