package reflector

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	etcdmetrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/freshcache/watchcache/metrics"
)

// Etcd makes a reflector list and watch etcd with a client of its own
// instead of through the etcd3 store (package documentation, "Reading etcd
// directly").
type Etcd struct {
	// KV lists the resource; Watcher watches it and asks for progress.
	// Usually both are one *clientv3.Client.
	KV      clientv3.KV
	Watcher clientv3.Watcher
	// Key is the resource's key prefix in etcd, as the etcd3 store keeps
	// it (EtcdKey), ending in "/".
	Key string
	// Codec, Transformer and NewFunc decode a stored value as the etcd3
	// store does: the transformer (encryption at rest) with the whole key
	// as authenticated data, then the codec into a new object, whose
	// resourceVersion is then the revision the value was written at.
	Codec       runtime.Decoder
	Transformer value.Transformer
	NewFunc     func() runtime.Object
	// GroupResource labels the etcd3 store's own metrics, which the
	// reflector keeps counting: etcd requests, events and bookmarks.
	GroupResource schema.GroupResource
}

// EtcdKey is the key prefix under which an etcd3 store with
// storagebackend.Config.Prefix storagePrefix keeps the objects of
// resourcePrefix ("/pods"): "/registry/pods/".
func EtcdKey(storagePrefix, resourcePrefix string) string {
	k := strings.TrimPrefix(resourcePrefix, "/")
	if !strings.HasSuffix(k, "/") {
		k += "/"
	}
	return StorageRoot(storagePrefix) + k
}

// StorageRoot is the etcd key under which the etcd3 store keeps every
// resource of a storage prefix: the prefix made absolute, with a trailing
// "/".
func StorageRoot(storagePrefix string) string {
	root := path.Join("/", storagePrefix)
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return root
}

// decode turns the value stored at key into its object at revision rev.
func (e *Etcd) decode(ctx context.Context, versioner storage.Versioner, key, data []byte, rev int64) (runtime.Object, error) {
	plain, _, err := e.Transformer.TransformFromStorage(ctx, data, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("transform %q at %d: %w", key, rev, err)
	}
	obj, _, err := e.Codec.Decode(plain, nil, e.NewFunc())
	if err != nil {
		etcdmetrics.RecordDecodeError(e.GroupResource)
		return nil, fmt.Errorf("decode %q at %d: %w", key, rev, err)
	}
	if err := versioner.UpdateObject(obj, uint64(rev)); err != nil {
		return nil, fmt.Errorf("version %q at %d: %w", key, rev, err)
	}
	return obj, nil
}

// etcdContext is ctx as every request of the reflector's own client
// carries it: the reflector's metadata, which picks its watch stream, and
// the etcd3 store's require-leader flag, so that a member without a
// leader ends the watch rather than serve a stale stream.
func (r *Reflector) etcdContext(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(r.WithMetadata(ctx))
}

// listEtcd lists the resource in pages, every page at the first one's
// revision, as the etcd3 store's paginated list does. It returns the
// objects, that revision and the stored size of each key's value.
func (r *Reflector) listEtcd(ctx context.Context) ([]runtime.Object, uint64, map[string]int64, error) {
	e := r.cfg.Etcd
	ctx = r.etcdContext(ctx)
	var (
		objs  []runtime.Object
		rev   int64
		sizes = map[string]int64{}
		from  = e.Key
	)
	end := clientv3.GetPrefixRangeEnd(e.Key)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(r.cfg.PageSize)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		start := time.Now()
		resp, err := e.KV.Get(ctx, from, opts...)
		etcdmetrics.RecordEtcdRequest("list", e.GroupResource, err, start)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("list %s: %w", e.Key, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			obj, err := e.decode(ctx, r.cfg.Versioner, kv.Key, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, 0, nil, err
			}
			objs = append(objs, obj)
			sizes[string(kv.Key)] = int64(len(kv.Value))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return objs, uint64(rev), sizes, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// watchEtcd is watch with the reflector's own client. Every etcd watch
// response holds whole revisions (etcd's watch API guarantees it), so each
// revision goes to the sink as it arrives, with no progress round trip.
func (r *Reflector) watchEtcd(ctx context.Context) watchEnd {
	e := r.cfg.Etcd
	have := r.cfg.Sink.RV()
	// From the sink's revision itself, for the reason watch gives: a watch
	// that starts beyond etcd's revision withholds every progress
	// notification on its stream. The events of that revision are applied
	// already; they are skipped by revision and never decoded, so their
	// previous values need not have survived a compaction. Only a
	// compaction past it makes the watch start after it.
	from := int64(have)
	if from < 1 || r.cfg.Storage != nil && r.cfg.Storage.CompactRevision() > from {
		from++
	}
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithPrevKV()}
	if !r.cfg.UntrustedProgress {
		opts = append(opts, clientv3.WithProgressNotify())
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := e.Watcher.Watch(r.etcdContext(wctx), e.Key, opts...)
	progressed := false
	for {
		var (
			resp clientv3.WatchResponse
			ok   bool
		)
		select {
		case <-ctx.Done():
			return watchEnd{}
		case reason := <-r.relist:
			end := r.relistRequested(reason)
			end.progressed = progressed
			return end
		case resp, ok = <-wch:
		}
		if !ok {
			return watchEnd{progressed: progressed}
		}
		if err := resp.Err(); err != nil {
			end := classifyEtcd(err)
			end.progressed = progressed
			end.err = fmt.Errorf("watch %s from %d: %w", e.Key, from, err)
			return end
		}
		if resp.IsProgressNotify() {
			etcdmetrics.RecordEtcdBookmark(e.GroupResource)
			if !r.cfg.UntrustedProgress {
				progressed = r.progress()
				// Even one at or below the cache's revision answers a
				// progress request; the sink ignores its revision.
				r.receive(uint64(resp.Header.Revision))
				r.cfg.Sink.Progress(uint64(resp.Header.Revision))
			}
			continue
		}
		applied, end := r.applyEtcd(wctx, resp.Events)
		if applied {
			progressed = r.progress()
		}
		if end != nil {
			end.progressed = progressed
			return *end
		}
	}
}

// applyEtcd hands the sink the revisions of one watch response that the
// reflector has not received yet, one Apply per revision, and keeps the
// sizes current. It returns whether it applied any, and how the watch
// ends if it must: an event that fails, or one the sink was moved past
// (received.go).
func (r *Reflector) applyEtcd(ctx context.Context, evs []*clientv3.Event) (bool, *watchEnd) {
	applied := false
	for i := 0; i < len(evs); {
		rev := evs[i].Kv.ModRevision
		j := i + 1
		for j < len(evs) && evs[j].Kv.ModRevision == rev {
			j++
		}
		if r.movedPast(uint64(rev)) {
			end := r.movedPastEnd(uint64(rev), false)
			return applied, &end
		}
		if uint64(rev) > r.received {
			batch := make([]Event, 0, j-i)
			for _, ev := range evs[i:j] {
				etcdmetrics.RecordEtcdEvent(r.cfg.Etcd.GroupResource)
				out, err := r.decodeEvent(ctx, ev)
				if err != nil {
					return applied, decodeFailed(err)
				}
				batch = append(batch, out)
			}
			if err := r.cfg.Sink.Apply(uint64(rev), batch); err != nil {
				return applied, &watchEnd{relist: metrics.RelistError, err: err}
			}
			r.receive(uint64(rev))
			applied = true
			for _, ev := range evs[i:j] {
				r.sizes.update(ev)
			}
		}
		i = j
	}
	return applied, nil
}

// decodeEvent turns one etcd event into the reflector's Event: a put into
// ADDED (a new key) or MODIFIED, a delete into DELETED with the object as
// it was before, at the delete's revision, as the etcd3 store reports it.
func (r *Reflector) decodeEvent(ctx context.Context, ev *clientv3.Event) (Event, error) {
	e := r.cfg.Etcd
	kv, typ := ev.Kv, watch.Modified
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if ev.PrevKv == nil {
			return Event{}, fmt.Errorf("delete of %q at %d came without its previous value", ev.Kv.Key, ev.Kv.ModRevision)
		}
		kv, typ = ev.PrevKv, watch.Deleted
	case ev.IsCreate():
		typ = watch.Added
	}
	obj, err := e.decode(ctx, r.cfg.Versioner, ev.Kv.Key, kv.Value, ev.Kv.ModRevision)
	if err != nil {
		return Event{}, err
	}
	return Event{Type: typ, Object: obj}, nil
}

// decodeFailed ends a watch whose event could not be decoded: retried on
// the same history if the transformer could not reach its KMS plugin
// (classify), relisted otherwise.
func decodeFailed(err error) *watchEnd {
	if unreachableTransformer(err.Error()) {
		return &watchEnd{transient: true, err: err}
	}
	return &watchEnd{relist: metrics.RelistError, err: err}
}

// classifyEtcd turns a watch error of the reflector's own client into how
// the watch ends: a compaction relists, a watch from a revision etcd has
// not reached (an etcd restored from an older backup) relists, anything
// else (no leader, overload, a broken connection) is retried on the same
// history.
func classifyEtcd(err error) watchEnd {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return watchEnd{relist: metrics.RelistCompacted, err: err}
	case errors.Is(err, rpctypes.ErrFutureRev):
		return watchEnd{relist: metrics.RelistError, err: err}
	}
	leaderless := errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrLeaderChanged) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail)
	return watchEnd{transient: true, leaderless: leaderless, err: err}
}

// storedSizes keeps, with Etcd, the size of every key's stored value, for
// the list cost estimate (SizeBasedListCostEstimate) that the etcd3 store
// would otherwise keep from its own lists and watches. Only the Run
// goroutine changes it; StoredSizes reads the totals.
type storedSizes struct {
	byKey map[string]int64
	mu    sync.Mutex
	total int64
}

// reset installs the sizes of a list.
func (s *storedSizes) reset(byKey map[string]int64) {
	var total int64
	for _, n := range byKey {
		total += n
	}
	s.mu.Lock()
	s.byKey, s.total = byKey, total
	s.mu.Unlock()
}

// update follows one applied event.
func (s *storedSizes) update(ev *clientv3.Event) {
	key := string(ev.Kv.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[string]int64{}
	}
	s.total -= s.byKey[key]
	if ev.Type == mvccpb.DELETE {
		delete(s.byKey, key)
		return
	}
	n := int64(len(ev.Kv.Value))
	s.byKey[key] = n
	s.total += n
}

// StoredSizes is, with Etcd, how many objects the reflector has handed the
// sink and the total size of their stored values; zeros without Etcd.
func (r *Reflector) StoredSizes() (objects, bytes int64) {
	r.sizes.mu.Lock()
	defer r.sizes.mu.Unlock()
	return int64(len(r.sizes.byKey)), r.sizes.total
}
