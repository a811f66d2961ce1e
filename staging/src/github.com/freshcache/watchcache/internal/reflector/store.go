package reflector

// The etcd3 store's side of the watch: how a store watch is opened, read
// and ended, and the untrusted-progress loop, which only runs through the
// store. watch in reflector.go is the trusted loop; etcd.go reads etcd
// itself.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/metrics"
)

// classify turns a watch ERROR event into how the watch ends.
func classify(err error) watchEnd {
	switch {
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return watchEnd{relist: metrics.RelistCompacted, err: err}
	case apierrors.IsInternalError(err) && fromEtcd(err),
		apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		// The etcd3 store reports a lost leader (or a member that cannot
		// reach one) as an internal error: the history is intact, so the
		// same watch is retried from the cache's revision.
		return watchEnd{transient: true, leaderless: noLeader(err), err: err}
	case apierrors.IsInternalError(err) && unreachableTransformer(causes(err)...):
		// A KMS plugin that cannot be reached: the value is fine and a
		// relist could not decrypt it either. As upstream's cacher does,
		// the same watch is retried, within the retry budget.
		return watchEnd{transient: true, err: err}
	}
	// Anything else, a value that the transformer or the codec could not
	// read above all, comes back at the same event on every watch from the
	// same revision: only a relist gets past it, or finds that it cannot
	// and leaves the cache pending, which clients see at once.
	return watchEnd{relist: metrics.RelistError, err: err}
}

// transientCodes are the gRPC codes of a call that may succeed when tried
// again: the server was unreachable, overloaded or too slow.
var transientCodes = []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted}

// unreachableTransformer reports whether the error texts of a failed
// value transformation show a remote call (a KMS plugin's gRPC call, which
// the KMS envelopes wrap with %w) that failed with a transient code. The
// etcd3 store hands over only the text; a value that is corrupt or
// encrypted with an unknown key says nothing of the kind, and relists.
func unreachableTransformer(texts ...string) bool {
	for _, text := range texts {
		for _, c := range transientCodes {
			if strings.Contains(text, "rpc error: code = "+c.String()+" ") {
				return true
			}
		}
	}
	return false
}

// noLeader reports whether a transient watch error says that etcd has no
// leader, or had none when it answered: its texts are etcd's (rpctypes).
func noLeader(err error) bool {
	for _, text := range causes(err) {
		if strings.Contains(text, "etcdserver: no leader") || strings.Contains(text, "etcdserver: leader changed") ||
			strings.Contains(text, "due to previous leader failure") {
			return true
		}
	}
	return false
}

// causes is the message of a status error and of each of its causes.
func causes(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil
	}
	st := status.Status()
	texts := []string{st.Message}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			texts = append(texts, c.Message)
		}
	}
	return texts
}

// fromEtcd reports whether an internal-error watch event carries an error
// of etcd or of the connection to it. The etcd3 store wraps both those
// and the failures to decode or transform a value as a plain internal
// error, whose cause is the original error's text: etcd's own errors
// start with "etcdserver: " (rpctypes), gRPC's with "rpc error: ".
func fromEtcd(err error) bool {
	for _, text := range causes(err) {
		text = strings.TrimPrefix(text, "Internal error occurred: ")
		if strings.HasPrefix(text, "etcdserver: ") || strings.HasPrefix(text, "rpc error: ") {
			return true
		}
	}
	return false
}

// watchUntrusted is watch for an etcd whose progress notifications cannot
// be trusted: events go to the sink one at a time, as upstream's cacher
// applies them, and bookmarks are ignored. Since the sink may then hold
// part of a transaction, a watch that ends is resumed from the revision
// before it, skipping the keys of that revision it applied already (etcd
// changes a key at most once per revision).
func (r *Reflector) watchUntrusted(ctx context.Context) watchEnd {
	from := r.cfg.Sink.RV()
	if r.untrusted.rv == from && len(r.untrusted.keys) > 0 && from > 1 {
		from--
	}
	w, err := r.open(ctx, from)
	if err != nil {
		return r.openFailed(from, err)
	}
	defer w.Stop()
	progressed := false
	for {
		ev, ok, why := r.next(ctx, w)
		if end, done := r.ended(ev, ok, why, progressed); done {
			return end
		}
		if ev.Type == watch.Bookmark {
			continue
		}
		rv, err := r.cfg.Versioner.ObjectResourceVersion(ev.Object)
		if err != nil {
			return watchEnd{relist: metrics.RelistError, err: err, progressed: progressed}
		}
		key := objectKey(ev.Object)
		have := r.cfg.Sink.RV()
		switch {
		case rv < have:
			continue
		case rv == have:
			// Part of the revision the sink is in: apply what it lacks.
			if _, done := r.untrusted.keys[key]; done || r.untrusted.rv != rv {
				continue
			}
		default:
			r.untrusted.rv = rv
			r.untrusted.keys = map[string]struct{}{}
		}
		// Progress is an event applied. The events of the revision the
		// watch rewound to are delivered again on every resume and
		// skipped above; counting them would let a watch that fails
		// right after them retry for ever, the cache frozen but ready.
		progressed = r.progress()
		if err := r.cfg.Sink.Apply(rv, []Event{{Type: ev.Type, Object: ev.Object}}); err != nil {
			return watchEnd{relist: metrics.RelistError, err: err, progressed: true}
		}
		r.receive(rv)
		r.untrusted.keys[key] = struct{}{}
	}
}

func objectKey(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// ended reports how the watch ends when next's result ends it: the channel
// closed (or ctx, or a Relist) or an ERROR event.
func (r *Reflector) ended(ev watch.Event, ok bool, why watchEnd, progressed bool) (watchEnd, bool) {
	switch {
	case !ok:
		why.progressed = progressed
		return why, true
	case ev.Type == watch.Error:
		e := classify(apierrors.FromObject(ev.Object))
		e.progressed = progressed
		e.err = fmt.Errorf("watch %s: %w", r.cfg.Prefix, e.err)
		return e, true
	}
	return watchEnd{}, false
}

// next waits for the watch's next event. It reports ok=false when the
// watch channel closed, ctx is done, or Relist was called (end.relist set).
func (r *Reflector) next(ctx context.Context, w watch.Interface) (watch.Event, bool, watchEnd) {
	select {
	case <-ctx.Done():
		return watch.Event{}, false, watchEnd{}
	case reason := <-r.relist:
		return watch.Event{}, false, r.relistRequested(reason)
	case ev, ok := <-w.ResultChan():
		return ev, ok, watchEnd{}
	}
}

// relistRequested is how a watch ends when Relist asked for reason.
func (r *Reflector) relistRequested(reason string) watchEnd {
	return watchEnd{relist: reason, requested: true, err: fmt.Errorf("relist %s: %s", r.cfg.Prefix, reason)}
}

func (r *Reflector) open(ctx context.Context, from uint64) (watch.Interface, error) {
	return r.cfg.Storage.Watch(r.WithMetadata(ctx), r.cfg.Prefix, storage.ListOptions{
		ResourceVersion: strconv.FormatUint(from, 10),
		Recursive:       true,
		ProgressNotify:  !r.cfg.UntrustedProgress,
		Predicate:       storage.Everything,
	})
}

func (r *Reflector) openFailed(from uint64, err error) watchEnd {
	err = fmt.Errorf("watch %s from %d: %w", r.cfg.Prefix, from, err)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return watchEnd{relist: metrics.RelistCompacted, err: err}
	}
	// The etcd3 store opens watches lazily; an error here is a transport
	// or overload problem, worth retrying on the same history.
	return watchEnd{transient: true, err: err}
}
