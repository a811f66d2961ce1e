package fanout

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/metrics"
)

// Defaults for Config.
const (
	DefaultQueueCapacity     = 1024
	DefaultResultBuffer      = 100
	DefaultBookmarkFrequency = time.Minute
	// bookmarkTick is how often due bookmarks are looked for.
	bookmarkTick = 250 * time.Millisecond
	// preDeadline is how long before a watch's deadline its last bookmark
	// is sent, so that the client can resume from it.
	preDeadline = 2 * time.Second
)

// Config configures a Fanout. Zero fields take the defaults above.
type Config struct {
	Versioner storage.Versioner
	// NewFunc returns an empty object of the resource, used for bookmarks.
	NewFunc func() runtime.Object
	// TriggerFunc, if set, returns an object's value of the trigger index.
	TriggerFunc storage.IndexerFunc
	// QueueCapacity is how many undelivered events a watcher may have before
	// it is terminated as slow.
	QueueCapacity int
	// ResultBuffer is the capacity of each watcher's result channel.
	ResultBuffer int
	// BookmarkFrequency is how often a watcher that allows bookmarks gets one.
	BookmarkFrequency time.Duration
	Clock             clock.WithTicker
	Metrics           metrics.Recorder
}

// Fanout is the set of watchers of one cache.
type Fanout struct {
	cfg Config

	mu struct {
		sync.Mutex
		// rv is the revision of the last event or progress dispatched.
		rv uint64
		// untriggered watchers see every event; triggered[v] see the events
		// whose object has trigger value v.
		untriggered map[*Watcher]struct{}
		triggered   map[string]map[*Watcher]struct{}
		// bookmarking are the watchers that allow bookmarks.
		bookmarking map[*Watcher]struct{}
	}
}

// New returns an empty Fanout.
func New(cfg Config) *Fanout {
	if cfg.QueueCapacity <= 0 {
		cfg.QueueCapacity = DefaultQueueCapacity
	}
	if cfg.ResultBuffer <= 0 {
		cfg.ResultBuffer = DefaultResultBuffer
	}
	if cfg.BookmarkFrequency <= 0 {
		cfg.BookmarkFrequency = DefaultBookmarkFrequency
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.Discard{}
	}
	f := &Fanout{cfg: cfg}
	f.mu.untriggered = map[*Watcher]struct{}{}
	f.mu.triggered = map[string]map[*Watcher]struct{}{}
	f.mu.bookmarking = map[*Watcher]struct{}{}
	return f
}

// Spec describes a new watcher.
type Spec struct {
	// Ctx ends the watcher when done. It also carries the APF
	// initialization signal, raised once the initial state is sent.
	Ctx context.Context
	// Key is the storage key; with Recursive, a prefix ending in "/".
	Key       string
	Recursive bool
	Predicate storage.SelectionPredicate
	// Trigger, if non-nil, restricts dispatch to events whose object (old or
	// new) has this trigger value.
	Trigger *string
	// StartRV: events with revision > StartRV come from Dispatch.
	StartRV uint64
	// Initial, if set, is sent first as ADDED events (selected).
	Initial *store.Snapshot
	// Backlog is sent next; its events have revisions <= StartRV.
	Backlog []history.Event
	// InitialEventsEnd sends the initial-events-end bookmark at StartRV.
	InitialEventsEnd bool
}

// Add registers a watcher. The caller must exclude Dispatch and Progress for
// the duration of the call (see package doc).
func (f *Fanout) Add(spec Spec) *Watcher {
	w := newWatcher(f, spec)
	f.mu.Lock()
	if spec.Trigger != nil {
		set := f.mu.triggered[*spec.Trigger]
		if set == nil {
			set = map[*Watcher]struct{}{}
			f.mu.triggered[*spec.Trigger] = set
		}
		set[w] = struct{}{}
	} else {
		f.mu.untriggered[w] = struct{}{}
	}
	if spec.Predicate.AllowWatchBookmarks {
		w.nextBookmark = w.bookmarkAfter(f.cfg.Clock.Now())
		f.mu.bookmarking[w] = struct{}{}
	}
	f.mu.Unlock()
	f.cfg.Metrics.WatchersDelta(1)
	go metrics.Labeled(metrics.ProfileFanout, w.run)
	return w
}

func (f *Fanout) remove(w *Watcher) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removeLocked(w)
}

func (f *Fanout) removeLocked(w *Watcher) {
	if w.spec.Trigger != nil {
		set := f.mu.triggered[*w.spec.Trigger]
		delete(set, w)
		if len(set) == 0 {
			delete(f.mu.triggered, *w.spec.Trigger)
		}
	} else {
		delete(f.mu.untriggered, w)
	}
	delete(f.mu.bookmarking, w)
}

// terminateSlowLocked closes the watchers whose queue was full: they did not
// keep up. They are collected first and closed after the walk over the
// watcher sets, which removing them would change.
func (f *Fanout) terminateSlowLocked(slow []*Watcher) {
	for _, w := range slow {
		f.removeLocked(w)
		w.terminate(metrics.ReasonSlow)
	}
}

// Len is the number of registered watchers.
func (f *Fanout) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.mu.untriggered)
	for _, set := range f.mu.triggered {
		n += len(set)
	}
	return n
}

// Dispatch hands evs, in order, to every interested watcher. It never
// blocks. The events of one etcd transaction (one revision) go in one
// call: a bookmark, which needs the same lock, can then never fall between
// them and tell a client it has seen a revision it has only part of.
func (f *Fanout) Dispatch(evs ...*history.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range evs {
		f.dispatchLocked(ev)
		f.mu.rv = max(f.mu.rv, ev.RV)
	}
}

func (f *Fanout) dispatchLocked(ev *history.Event) {
	var (
		slow   []*Watcher
		shared *Shared // made for the first watcher, then handed to all
	)
	offer := func(w *Watcher) {
		if ev.RV <= w.spec.StartRV {
			return
		}
		if shared == nil && ev.Object != nil {
			shared, _ = share(ev.Object.Obj) // nil: each watcher copies
		}
		if !w.enqueue(item{ev: ev, obj: shared}) {
			slow = append(slow, w)
		}
	}
	for w := range f.mu.untriggered {
		offer(w)
	}
	if len(f.mu.triggered) > 0 && f.cfg.TriggerFunc != nil {
		var seen string
		if ev.Object != nil {
			seen = f.cfg.TriggerFunc(ev.Object.Obj)
			for w := range f.mu.triggered[seen] {
				offer(w)
			}
		}
		if ev.Prev != nil {
			if v := f.cfg.TriggerFunc(ev.Prev.Obj); ev.Object == nil || v != seen {
				for w := range f.mu.triggered[v] {
					offer(w)
				}
			}
		}
	}
	f.terminateSlowLocked(slow)
}

// Progress records that every event up to rv has been dispatched.
func (f *Fanout) Progress(rv uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.rv = max(f.mu.rv, rv)
}

// Reset sets the dispatched revision after a relist. Watchers must have
// been terminated first: a relist cannot tell them what they missed.
func (f *Fanout) Reset(rv uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.rv = rv
}

// SendBookmarks enqueues a bookmark at the dispatched revision for every
// watcher whose bookmark is due at now.
func (f *Fanout) SendBookmarks(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var slow []*Watcher
	for w := range f.mu.bookmarking {
		if w.nextBookmark.IsZero() || now.Before(w.nextBookmark) {
			continue
		}
		w.nextBookmark = w.bookmarkAfter(now)
		if !w.enqueue(item{bookmark: f.mu.rv}) {
			slow = append(slow, w)
		}
	}
	f.terminateSlowLocked(slow)
}

// TerminateAll closes every watcher: for a relist (reason
// metrics.ReasonRelist, counted) or a shutdown (reason "", not counted).
func (f *Fanout) TerminateAll(reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	all := make([]*Watcher, 0, len(f.mu.untriggered))
	for w := range f.mu.untriggered {
		all = append(all, w)
	}
	for _, set := range f.mu.triggered {
		for w := range set {
			all = append(all, w)
		}
	}
	for _, w := range all {
		f.removeLocked(w)
		w.terminate(reason)
	}
}

// Run sends due bookmarks until stop is closed.
func (f *Fanout) Run(stop <-chan struct{}) {
	t := f.cfg.Clock.NewTicker(bookmarkTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C():
			f.SendBookmarks(now)
		}
	}
}
