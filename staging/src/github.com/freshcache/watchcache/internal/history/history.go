package history

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshcache/watchcache/internal/store"
)

// DefaultWindow is how long events are kept by default, as upstream's
// DefaultEventFreshDuration.
const DefaultWindow = 75 * time.Second

// DefaultCapacity bounds the number of events kept by default, whatever
// their age. At ~1 KiB per event of bookkeeping it caps history memory near
// 100 MiB per resource.
const DefaultCapacity = 100_000

var (
	// ErrExpired means the requested revision is older than the window.
	ErrExpired = errors.New("watchcache/history: revision is older than the history window")
	// ErrFuture means the requested revision is newer than the last event.
	ErrFuture = errors.New("watchcache/history: revision is newer than the history")
	// ErrOutOfOrder means an appended event's revision is below the last
	// one.
	ErrOutOfOrder = errors.New("watchcache/history: event revision goes back")
)

// Event is one change of one object. Several events share a revision
// when one etcd transaction changed several keys (a lease expiring, a
// delete by prefix); they are kept in the order etcd gave them.
type Event struct {
	Type watch.EventType // watch.Added, watch.Modified or watch.Deleted.
	// Object is the new version. For Deleted it is the last version, with
	// its resource version set to the deletion revision.
	Object *store.Object
	// Prev is the version before the event, nil for Added.
	Prev *store.Object
	// RV is the etcd revision of the event.
	RV uint64
	// Snapshot is the state after every event of revision RV: the events
	// of one revision share it, so no snapshot in the history shows part
	// of a transaction.
	Snapshot *store.Snapshot
	// At is when the cache applied the event; eviction by age uses it.
	At time.Time
}

// Options configures a History. The zero value means the defaults.
type Options struct {
	// Window is how long an event is kept. Zero means DefaultWindow.
	Window time.Duration
	// Capacity is the most events kept. Zero means DefaultCapacity.
	Capacity int
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// History is the event window. See the package documentation.
type History struct {
	window   time.Duration
	capacity int
	now      func() time.Time

	mu struct {
		sync.RWMutex
		// events[head:] are the retained events, oldest first. head avoids
		// copying on every eviction; the slice is compacted when head grows.
		events []Event
		head   int
		// base is the state at the revision just below the first retained
		// event (the list, or the last evicted event).
		base *store.Snapshot
	}
}

// New returns a History whose base is the empty state at revision 0.
func New(opts Options) *History {
	h := &History{window: opts.Window, capacity: opts.Capacity, now: opts.Now}
	if h.window <= 0 {
		h.window = DefaultWindow
	}
	if h.capacity <= 0 {
		h.capacity = DefaultCapacity
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.mu.base = store.NewWriter(nil).Snapshot()
	return h
}

// Reset drops every event and makes base the new starting state, as after a
// relist.
func (h *History) Reset(base *store.Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.events = nil
	h.mu.head = 0
	h.mu.base = base
}

// Append adds evs, in order, then evicts what falls out of the window.
// Revisions must not decrease; an event may share the revision of the one
// before it (same etcd transaction). Nothing is appended on error.
func (h *History) Append(evs ...Event) error {
	if len(evs) == 0 {
		return nil
	}
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	last := h.lastLocked()
	for _, e := range evs {
		if e.RV < last {
			return fmt.Errorf("%w: %d after %d", ErrOutOfOrder, e.RV, last)
		}
		last = e.RV
	}
	for _, e := range evs {
		if e.At.IsZero() {
			e.At = now
		}
		h.mu.events = append(h.mu.events, e)
	}
	h.evictLocked(now)
	return nil
}

// Tick evicts events that aged out of the window even when no new event
// arrives, so that an idle resource does not pin old snapshots forever.
func (h *History) Tick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.evictLocked(h.now())
}

func (h *History) evictLocked(now time.Time) {
	cutoff := now.Add(-h.window)
	for h.mu.head < len(h.mu.events) {
		oldest := h.mu.events[h.mu.head]
		n := len(h.mu.events) - h.mu.head
		if n <= h.capacity && !oldest.At.Before(cutoff) {
			break
		}
		h.mu.base = oldest.Snapshot
		h.mu.events[h.mu.head] = Event{}
		h.mu.head++
	}
	if h.mu.head > 1024 && h.mu.head*2 > len(h.mu.events) {
		h.mu.events = append([]Event(nil), h.mu.events[h.mu.head:]...)
		h.mu.head = 0
	}
}

func (h *History) lastLocked() uint64 {
	if n := len(h.mu.events); n > h.mu.head {
		return h.mu.events[n-1].RV
	}
	return h.mu.base.RV()
}

// Base is the oldest revision the history can serve: watches from Base()
// and Exact reads at Base() still work.
func (h *History) Base() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.mu.base.RV()
}

// Last is the revision of the newest event (or the base).
func (h *History) Last() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.lastLocked()
}

// Len is the number of retained events.
func (h *History) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.mu.events) - h.mu.head
}

// Since returns every event with revision > rv, oldest first. It fails with
// ErrExpired when events after rv were evicted.
func (h *History) Since(rv uint64) ([]Event, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if rv < h.mu.base.RV() {
		return nil, fmt.Errorf("%w: %d < %d", ErrExpired, rv, h.mu.base.RV())
	}
	evs := h.mu.events[h.mu.head:]
	i := search(evs, rv)
	return append([]Event(nil), evs[i:]...), nil
}

// SnapshotAt returns the state at exactly revision rv, labelled rv. It fails
// with ErrExpired below Base() and ErrFuture above upTo, the caller's
// current revision (which may exceed Last() after progress notifications).
func (h *History) SnapshotAt(rv, upTo uint64) (*store.Snapshot, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if rv < h.mu.base.RV() {
		return nil, fmt.Errorf("%w: %d < %d", ErrExpired, rv, h.mu.base.RV())
	}
	if rv > upTo {
		return nil, fmt.Errorf("%w: %d > %d", ErrFuture, rv, upTo)
	}
	evs := h.mu.events[h.mu.head:]
	i := search(evs, rv) // first event with RV > rv
	if i == 0 {
		return h.mu.base.AtRV(rv), nil
	}
	return evs[i-1].Snapshot.AtRV(rv), nil
}

// search returns the index of the first event with RV > rv.
func search(evs []Event, rv uint64) int {
	lo, hi := 0, len(evs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if evs[m].RV <= rv {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// CheckMonotonic verifies that revisions never decrease from the base and
// that each event carries the snapshot of its revision. It is for tests
// and the invariants build.
func (h *History) CheckMonotonic() error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	prev := h.mu.base.RV()
	for _, e := range h.mu.events[h.mu.head:] {
		if e.RV < prev {
			return fmt.Errorf("history: event at %d follows %d", e.RV, prev)
		}
		if e.Snapshot != nil && e.Snapshot.RV() != e.RV {
			return fmt.Errorf("history: event at %d carries a snapshot at %d", e.RV, e.Snapshot.RV())
		}
		prev = e.RV
	}
	return nil
}
