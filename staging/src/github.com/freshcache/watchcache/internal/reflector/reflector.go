package reflector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/metrics"
)

// DefaultPageSize is the list page size, as upstream's cacher uses.
const DefaultPageSize = 10000

// DefaultTransientRetry is how long transient watch errors (etcd has no
// leader, the server is overloaded) are retried on the same history before
// the reflector gives up and relists: upstream's cacher allows its
// reflector 30 s (MaxInternalErrorRetryDuration).
const DefaultTransientRetry = 30 * time.Second

// LeaderRetry is the first step of a LeaderBackoff: the wait before a
// watch etcd refused for want of a leader is tried again (between half
// the step and the step), before the step grows.
const LeaderRetry = 100 * time.Millisecond

// ErrBackInTime is returned (and retried) when etcd lists at a revision
// older than the cache's.
var ErrBackInTime = errors.New("watchcache/reflector: list revision is older than the cache")

// Event is one change of one object, as the watch delivered it.
type Event struct {
	// Type is watch.Added, watch.Modified or watch.Deleted.
	Type   watch.EventType
	Object runtime.Object
}

// Sink receives the reflector's output. All calls come from the reflector
// goroutine, one at a time.
type Sink interface {
	// Replace installs the state listed at rv. reason is why the reflector
	// listed (metrics.Relist*).
	Replace(objs []runtime.Object, rv uint64, reason string) error
	// Apply applies events of revision rv, in order. rv is never below
	// RV(). Unless Config.UntrustedProgress is set, evs is every event of
	// revision rv (a whole etcd transaction) and rv > RV(); with it, events
	// come one at a time and rv may equal RV().
	Apply(rv uint64, evs []Event) error
	// Progress records a progress notification: every event up to rv has
	// been delivered. rv may be at or below RV(); such a notification moves
	// nothing but still answers a progress request. Never called with
	// Config.UntrustedProgress.
	Progress(rv uint64)
	// RV is the revision of the state the sink holds (0 before any list).
	RV() uint64
	// Unready reports that the state is no longer kept current: the
	// reflector must list again (err says why) and will call Replace once
	// it has.
	Unready(err error)
}

// Config configures a Reflector.
type Config struct {
	// Storage is the etcd3 store of the resource.
	Storage storage.Interface
	// Versioner parses resource versions (storage.APIObjectVersioner).
	Versioner storage.Versioner
	// Prefix is the resource's key prefix, ending in "/".
	Prefix      string
	NewListFunc func() runtime.Object
	Sink        Sink
	// PageSize of the initial list; 0 means DefaultPageSize.
	PageSize int64
	// Metadata is attached to the watch and progress-request contexts.
	Metadata metadata.MD
	// Clock drives the retry backoff. Nil means the real clock.
	Clock clock.Clock
	// Name is used in logs.
	Name string

	// UntrustedProgress says that etcd's progress notifications may run
	// ahead of its events (etcd#15220: the version guard rejected the
	// cluster). Bookmarks are then ignored, and since only a later event
	// could prove a transaction complete, events are applied one at a
	// time, as upstream's cacher does.
	UntrustedProgress bool
	// RevisionPending is called when the watch has delivered events of
	// revision rv, has nothing more to hand over right now, and nothing
	// proves yet that rv is complete (another event of the same etcd
	// transaction may still be on its way). It must not block; it should
	// see to a progress request, whose notification completes rv. It is
	// not called for a revision of one event that the cache's own write
	// committed (WriteEnded), and only after OwnWriteGrace for one that
	// a write in flight may have. Nil: rv completes with the next event,
	// notification or own write only.
	RevisionPending func(rv uint64)
	// TransientRetry bounds how long transient watch errors are retried
	// without a relist. Zero: DefaultTransientRetry.
	TransientRetry time.Duration
	// LeaderBackoff paces the watches etcd refuses for want of a leader,
	// together with every reflector that shares it: give the reflectors
	// of one etcd cluster one. Nil: one of its own.
	LeaderBackoff *LeaderBackoff
	// Metrics counts re-watches after transient errors. Nil: discarded.
	Metrics metrics.Recorder
}

// Reflector is the list+watch loop. See the package documentation.
type Reflector struct {
	cfg Config

	// listed is closed once the first list has been applied.
	listed     chan struct{}
	listedOnce sync.Once
	// relist carries a reason from Relist to the watch loop.
	relist chan string
	// untrusted is, under UntrustedProgress, the last revision the sink
	// got events of and the keys those events changed. Only the Run
	// goroutine uses it.
	untrusted struct {
		rv   uint64
		keys map[string]struct{}
	}
	// lateAt is a sink revision whose watch must start after it, not at
	// it (see watch): one started at it failed before it delivered
	// anything new. Only the Run goroutine uses it.
	lateAt uint64
	// own holds the revisions of the cache's own writes (WriteEnded).
	own ownWrites
	// received is the revision up to which the reflector has seen every
	// event itself (received.go); the sink's revision may be ahead of it.
	// Only the Run goroutine uses it.
	received uint64
	// transientSince is when the current run of transient watch errors
	// began; zero while watches make progress. Only the Run goroutine
	// uses it.
	transientSince time.Time

	mu struct {
		sync.Mutex
		// err is the last list/watch error, for readiness reporting.
		err error
	}
}

// New returns a Reflector; call Run to start it.
func New(cfg Config) *Reflector {
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Metadata == nil {
		cfg.Metadata = metadata.New(map[string]string{"source": "freshcache"})
	}
	if cfg.TransientRetry <= 0 {
		cfg.TransientRetry = DefaultTransientRetry
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.Discard{}
	}
	if cfg.LeaderBackoff == nil {
		cfg.LeaderBackoff = NewLeaderBackoff()
	}
	r := &Reflector{cfg: cfg, listed: make(chan struct{}), relist: make(chan string, 1)}
	r.own.wake = make(chan struct{}, 1)
	return r
}

// Listed is closed once the initial list is in the sink.
func (r *Reflector) Listed() <-chan struct{} { return r.listed }

// LastError is the most recent list or watch error, nil after a success.
func (r *Reflector) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.err
}

func (r *Reflector) setErr(err error) {
	r.mu.Lock()
	r.mu.err = err
	r.mu.Unlock()
}

// Relist makes the reflector drop its watch and list again, for reason
// (metrics.Relist*). It does not block; a relist already asked for and not
// yet started absorbs the call.
func (r *Reflector) Relist(reason string) {
	select {
	case r.relist <- reason:
	default:
	}
}

// WithMetadata returns ctx carrying the reflector's gRPC metadata, so that a
// request made with it (RequestWatchProgress) targets the cache's stream.
func (r *Reflector) WithMetadata(ctx context.Context) context.Context {
	return metadata.NewOutgoingContext(ctx, r.cfg.Metadata)
}

// RequestProgress asks etcd for a progress notification on the cache's
// watch stream.
func (r *Reflector) RequestProgress(ctx context.Context) error {
	return r.cfg.Storage.RequestWatchProgress(r.WithMetadata(ctx))
}

// watchEnd is how a watch ended.
type watchEnd struct {
	// relist, if set, is why the cache must list again.
	relist string
	// transient: the watch failed in a way that retrying the same watch
	// can fix (etcd lost its leader, was overloaded or unreachable).
	transient bool
	// leaderless: transient because etcd has no leader (or just changed
	// it); it is tried again after the shared LeaderBackoff, not the
	// reflector's own backoff.
	leaderless bool
	// progressed: the watch delivered at least one event or notification.
	progressed bool
	// requested: the relist was asked for (Relist), not forced by etcd.
	requested bool
	err       error
}

// Run lists and watches until stop is closed.
func (r *Reflector) Run(stop <-chan struct{}) {
	// ctx ends when stop closes or Run returns.
	ctx, cancel := context.WithCancel(wait.ContextForChannel(stop))
	defer cancel()
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 30 * time.Second}
	cur := backoff
	reason := metrics.RelistInitial
	needList := true
	for ctx.Err() == nil {
		var err error
		leaderless := false
		if needList {
			if err = r.list(ctx, reason); err == nil {
				needList = false
				cur = backoff
				r.transientSince = time.Time{}
			}
		}
		if err == nil {
			end := r.watch(ctx)
			if ctx.Err() != nil {
				return
			}
			if end.progressed {
				cur = backoff
			}
			switch {
			case end.err == nil && end.relist == "":
				// The watch ended cleanly: resume at once.
				continue
			case end.requested:
				// Asked for (the inconsistency detector): not an error,
				// and no reason to wait before listing.
				klog.InfoS("freshcache: relisting on request", "resource", r.cfg.Name, "reason", end.relist)
				r.cfg.Sink.Unready(end.err)
				needList, reason = true, end.relist
				continue
			case end.relist != "":
				needList, reason = true, end.relist
			case end.transient:
				now := r.cfg.Clock.Now()
				if r.transientSince.IsZero() {
					r.transientSince = now
				}
				if now.Sub(r.transientSince) >= r.cfg.TransientRetry {
					needList, reason = true, metrics.RelistRetryBudget
				} else {
					r.cfg.Metrics.WatchRetried()
					leaderless = end.leaderless
				}
			default:
				needList, reason = true, metrics.RelistError
			}
			err = end.err
			if err == nil {
				err = fmt.Errorf("relist %s: %s", r.cfg.Prefix, reason)
			}
			if needList {
				// Like upstream's cacher going back to Pending when its
				// ListAndWatch returns: the state stops being current now.
				r.cfg.Sink.Unready(err)
			}
		} else {
			r.cfg.Sink.Unready(err)
		}
		r.setErr(err)
		// An error, not a V(2) line: while it lasts the cache does not move,
		// and a mistake that fails every event (a key function that rejects
		// the objects, a codec that cannot decode them) would otherwise go
		// unseen behind the timeouts and fallbacks of consistent reads.
		var (
			next      time.Duration
			recovered <-chan struct{}
		)
		if leaderless {
			// Each try is one stream etcd refuses at once. The caches of
			// the cluster back off together, and the first of them whose
			// watch delivers again wakes the rest (LeaderBackoff).
			next, recovered = r.cfg.LeaderBackoff.failed()
			klog.V(4).InfoS("freshcache: etcd has no leader, watching again", "resource", r.cfg.Name, "err", err, "retryIn", next)
		} else {
			next = cur.Step()
		}
		if !leaderless || r.cfg.Clock.Since(r.transientSince) < LeaderRetry {
			klog.ErrorS(err, "freshcache: list/watch failed, retrying", "resource", r.cfg.Name, "relist", needList, "retryIn", next)
		}
		t := r.cfg.Clock.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-recovered:
			t.Stop()
		}
	}
}

// progress notes that a watch delivered (an event applied or a progress
// notification beyond the sink's revision) and, if it follows transient
// errors, reports how long the cache was behind. It returns true, for the
// watch loops' progressed flag.
func (r *Reflector) progress() bool {
	r.cfg.LeaderBackoff.delivered()
	if !r.transientSince.IsZero() {
		r.cfg.Metrics.CaughtUp(r.cfg.Clock.Since(r.transientSince))
		r.transientSince = time.Time{}
	}
	return true
}

// watch follows etcd from the sink's revision until the watch ends, an
// error needs handling or ctx is done.
func (r *Reflector) watch(ctx context.Context) watchEnd {
	if r.cfg.UntrustedProgress {
		return r.watchUntrusted(ctx)
	}
	have := r.cfg.Sink.RV()
	from := have
	// etcd answers a progress request on a stream only while no watch on
	// it starts beyond etcd's revision (mvcc progressIfSync). A watch
	// from the sink's revision + 1, the store's meaning of "from", is
	// such a watch whenever the cache is as new as etcd, and it would
	// withhold every progress notification of every cache on the stream
	// until the next write anywhere. So the watch starts at the sink's
	// revision itself; its events are applied already and are skipped
	// below. Not when etcd compacted at or past it: the deletes of that
	// revision would come without their previous value, which the store
	// cannot decode. The store may not know of a compaction yet, so a
	// watch started early that fails before it delivers anything new is
	// followed by one that starts late (lateAt).
	early := have > 1 && r.lateAt != have && r.cfg.Storage.CompactRevision() < int64(have)
	if early {
		from--
	}
	w, err := r.open(ctx, from)
	if err != nil {
		if early {
			r.lateAt = have
		}
		return r.openFailed(from, err)
	}
	defer w.Stop()

	// batch holds the events of revision batchRV, which nothing has proven
	// complete yet: etcd gives every key of one transaction the same
	// revision and the store hands them over one by one. The batch is
	// applied when a later revision or a progress notification at or
	// beyond it arrives; if the watch ends first, it is dropped and the
	// next watch (from the sink's revision) delivers it again.
	var (
		batch   []Event
		batchRV uint64
	)
	// flush hands the batch over, now proven whole by by
	// (metrics.CompletedBy*).
	// A batch the sink was moved past meanwhile is not applied: the
	// watch ends in a relist (received.go).
	flush := func(by string) *watchEnd {
		if len(batch) == 0 {
			return nil
		}
		if r.movedPast(batchRV) {
			end := r.movedPastEnd(batchRV, true)
			return &end
		}
		r.cfg.Metrics.RevisionCompleted(by)
		err := r.cfg.Sink.Apply(batchRV, batch)
		batch = batch[:0]
		if err != nil {
			return &watchEnd{relist: metrics.RelistError, err: err, progressed: true}
		}
		r.receive(batchRV)
		return nil
	}
	progressed := false
	for {
		var (
			ev  watch.Event
			ok  bool
			why watchEnd
		)
		if len(batch) > 0 {
			whole := false
			select {
			case ev, ok = <-w.ResultChan():
			default:
				// Nothing more for now: batchRV is complete if the cache's
				// own write committed it; if not, etcd is asked to prove
				// it complete.
				if r.wholeOwnWrite(batchRV, len(batch)) {
					whole = true
				} else {
					ev, ok, why, whole = r.awaitWhole(ctx, w, batchRV, len(batch))
				}
			}
			if whole {
				if end := flush(metrics.CompletedByOwnWrite); end != nil {
					return *end
				}
				continue
			}
		} else {
			ev, ok, why = r.next(ctx, w)
		}
		if end, done := r.ended(ev, ok, why, progressed); done {
			if early && !progressed && end.err != nil {
				r.lateAt = have
			}
			return end
		}
		rv, err := r.cfg.Versioner.ObjectResourceVersion(ev.Object)
		if err != nil {
			return watchEnd{relist: metrics.RelistError, err: err, progressed: progressed}
		}
		if ev.Type == watch.Bookmark || rv > have {
			// The re-delivered events of the start revision are not
			// progress: a watch that fails on them again and again must
			// run into the retry budget.
			progressed = r.progress()
		}
		if ev.Type == watch.Bookmark {
			if len(batch) > 0 && rv >= batchRV {
				if end := flush(metrics.CompletedByProgress); end != nil {
					return *end
				}
			}
			// Even a notification at or below the cache's revision
			// answers a progress request; the sink ignores its revision.
			r.receive(rv)
			r.cfg.Sink.Progress(rv)
			continue
		}
		if rv <= r.received {
			// Applied already: the sink only holds whole revisions.
			continue
		}
		if r.movedPast(rv) {
			return r.movedPastEnd(rv, progressed)
		}
		if len(batch) > 0 && rv != batchRV {
			if end := flush(metrics.CompletedByEvent); end != nil {
				return *end
			}
		}
		batchRV = rv
		batch = append(batch, Event{Type: ev.Type, Object: ev.Object})
	}
}
