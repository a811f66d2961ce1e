package reflector

// The reflector's own high-water mark. The sink's revision is not only the
// reflector's: the cache's catch-up on the ledger of own writes moves it
// too, from outside, when every revision in between was this process's
// single-key write of another resource. The reflector therefore does not
// take "at or below the sink's revision" to mean "applied already". It
// keeps received, the revision up to which it has itself seen every event
// (a list, an Apply, a progress notification), and an event above that
// but at or below the sink's revision is one the sink was moved past
// without: the proof was wrong (an etcd restored from a snapshot under a
// running apiserver, a store that writes more than one key per
// transaction). It is never skipped; the reflector relists.

import (
	"errors"
	"fmt"

	"github.com/freshcache/watchcache/metrics"
)

// ErrMovedPastEvent is the error of a watch that delivered an event the
// sink had been moved past from outside the reflector (received.go).
var ErrMovedPastEvent = errors.New("watchcache/reflector: an event arrived at a revision the cache was moved past without it")

// receive notes that every event up to rv has reached the sink (or, for a
// progress notification, that there were none it lacks).
func (r *Reflector) receive(rv uint64) {
	r.received = max(r.received, rv)
}

// movedPast reports whether an event of revision rv, which the reflector
// has not received before, lies at or below the sink's revision, so that
// the sink was moved past it from outside. The caller ends the watch with
// movedPastEnd.
func (r *Reflector) movedPast(rv uint64) bool {
	return rv > r.received && rv <= r.cfg.Sink.RV()
}

// movedPastEnd ends a watch that delivered an event of revision rv that
// the sink had been moved past: the state may lack it, so only a relist
// restores it. The relist's reason counts it (metrics.RelistMovedPastEvent).
func (r *Reflector) movedPastEnd(rv uint64, progressed bool) watchEnd {
	err := fmt.Errorf("%w: event at %d, received up to %d, cache at %d", ErrMovedPastEvent, rv, r.received, r.cfg.Sink.RV())
	return watchEnd{relist: metrics.RelistMovedPastEvent, err: err, progressed: progressed}
}
