package reflector

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultPageSize is the list page size, as upstream's cacher uses.
const DefaultPageSize = 10000

// ErrBackInTime is returned (and retried) when etcd lists at a revision
// older than the cache's.
var ErrBackInTime = errors.New("watchcache/reflector: list revision is older than the cache")

// Sink receives the reflector's output. All calls come from the reflector
// goroutine, one at a time.
type Sink interface {
	// Replace installs the state listed at rv.
	Replace(objs []runtime.Object, rv uint64) error
	// Apply applies one ADDED, MODIFIED or DELETED event at rv.
	Apply(typ watch.EventType, obj runtime.Object, rv uint64) error
	// Progress records a progress notification: every event up to rv has
	// been delivered. rv may be at or below RV(); such a notification moves
	// nothing but still answers a progress request.
	Progress(rv uint64)
	// RV is the revision of the state the sink holds (0 before any list).
	RV() uint64
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
}

// Reflector is the list+watch loop. See the package documentation.
type Reflector struct {
	cfg Config

	// listed is closed once the first list has been applied.
	listed     chan struct{}
	listedOnce sync.Once

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
	r := &Reflector{cfg: cfg}
	r.listed = make(chan struct{})
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

// Run lists and watches until stop is closed.
func (r *Reflector) Run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 30 * time.Second}
	cur := backoff
	needList := true
	for ctx.Err() == nil {
		var err error
		if needList {
			err = r.list(ctx)
			if err == nil {
				needList = false
				cur = backoff
			}
		}
		if err == nil {
			var relist bool
			relist, err = r.watch(ctx)
			needList = relist
			if err == nil {
				// The watch ended cleanly: resume at once.
				cur = backoff
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		r.setErr(err)
		// An error, not a V(2) line: while it lasts the cache does not move,
		// and a mistake that fails every event (a key function that rejects
		// the objects, a codec that cannot decode them) would otherwise go
		// unseen behind the timeouts and fallbacks of consistent reads.
		next := cur.Step()
		klog.ErrorS(err, "freshcache: list/watch failed, retrying", "resource", r.cfg.Name, "retryIn", next)
		t := r.cfg.Clock.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (r *Reflector) list(ctx context.Context) error {
	var objs []runtime.Object
	var rv uint64
	cont := ""
	for {
		listObj := r.cfg.NewListFunc()
		opts := storage.ListOptions{
			Recursive: true,
			Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: r.cfg.PageSize, Continue: cont},
		}
		if err := r.cfg.Storage.GetList(ctx, r.cfg.Prefix, opts, listObj); err != nil {
			return fmt.Errorf("list %s: %w", r.cfg.Prefix, err)
		}
		// Each item gets its own allocation (a shallow copy out of the
		// list's Items array). Otherwise every cached object would keep the
		// whole page's array alive, including the slack capacity it grew
		// with while etcd3 appended to it (~15% of a pod's top-level size).
		items, err := meta.ExtractListWithAlloc(listObj)
		if err != nil {
			return err
		}
		objs = append(objs, items...)
		lm, err := meta.ListAccessor(listObj)
		if err != nil {
			return err
		}
		if rv == 0 {
			rv, err = r.cfg.Versioner.ParseResourceVersion(lm.GetResourceVersion())
			if err != nil {
				return err
			}
		}
		cont = lm.GetContinue()
		if cont == "" {
			break
		}
	}
	if have := r.cfg.Sink.RV(); rv < have {
		return fmt.Errorf("%w: listed at %d, cache at %d", ErrBackInTime, rv, have)
	}
	if err := r.cfg.Sink.Replace(objs, rv); err != nil {
		return err
	}
	r.setErr(nil)
	r.listedOnce.Do(func() { close(r.listed) })
	return nil
}

// watch follows etcd from the sink's revision. It returns relist=true when
// the cache must list again (compaction, error event, failed apply).
func (r *Reflector) watch(ctx context.Context) (relist bool, err error) {
	from := r.cfg.Sink.RV()
	wctx, cancel := context.WithCancel(r.WithMetadata(ctx))
	defer cancel()
	w, err := r.cfg.Storage.Watch(wctx, r.cfg.Prefix, storage.ListOptions{
		ResourceVersion: strconv.FormatUint(from, 10),
		Recursive:       true,
		ProgressNotify:  true,
		Predicate:       storage.Everything,
	})
	if err != nil {
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), fmt.Errorf("watch %s from %d: %w", r.cfg.Prefix, from, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			if ev.Type == watch.Error {
				return true, fmt.Errorf("watch %s: %w", r.cfg.Prefix, apierrors.FromObject(ev.Object))
			}
			rv, err := r.cfg.Versioner.ObjectResourceVersion(ev.Object)
			if err != nil {
				return true, err
			}
			if ev.Type == watch.Bookmark {
				// Even a notification at or below the cache's revision
				// answers a progress request; the sink ignores its revision.
				r.cfg.Sink.Progress(rv)
				continue
			}
			if rv <= r.cfg.Sink.RV() {
				continue
			}
			if err := r.cfg.Sink.Apply(ev.Type, ev.Object, rv); err != nil {
				return true, err
			}
		}
	}
}
