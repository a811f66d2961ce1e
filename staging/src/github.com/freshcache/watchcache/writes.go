package watchcache

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/klog/v2"

	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/oracle"
)

// WriteAnnouncer is implemented by a RevisionSource that can answer waiting
// reads with the revisions of the cache's own writes (*oracle.Oracle). The
// cache calls WriteStarting just before each write request goes to etcd
// and ends the Write with the written object's resourceVersion. The
// source's etcd cluster must be the storage's.
type WriteAnnouncer interface {
	WriteStarting() *oracle.Write
}

// A writeProbe follows one Create, Delete or GuaranteedUpdate through the
// etcd3 store, which tells nobody when it sends a request or whether its
// answer is a write: the store's own callbacks mark the moments. The
// transformer (AnnounceWrites) and the deletion validator run just before
// the store sends a write; the update function runs at the start of each
// attempt, so it withdraws an earlier attempt that etcd refused, and an
// attempt that turns out to change nothing (the store answers it from its
// own read, without a write) never reaches the transformer. When the call
// succeeds, the last attempt was a write, and the object carries the
// revision etcd committed it at.
//
// Two parties hear of the write: the revision source (WriteAnnouncer),
// which answers reads waiting for a revision with it, and the cache's
// reflector, for which the revision of a write of the store's, one key in
// one transaction, is whole the moment its event arrives.
//
// With ProgressFromOwnWrites a third party hears of it: the cluster's
// ledger (oracle.Ledger), which records the revision with the etcd key the
// store wrote, for every cache of the cluster to prove itself current by.
type writeProbe struct {
	announcer WriteAnnouncer // nil without RevisionsFromWrites
	w         *oracle.Write
	reflector *reflector.Reflector
	ledger    *oracle.Ledger // nil without ProgressFromOwnWrites
	// ticket is the ledger's record of the attempt in flight.
	ticket oracle.Sent
	// key is the etcd key the store writes, "" if unknown.
	key string
	// sent: the reflector and the ledger have been told of the attempt in
	// flight.
	sent bool
}

type writeProbeKey struct{}

// probeWrite returns ctx carrying a probe for one write call of key, or
// ctx and nil when writes answer no reads.
func (c *Cache) probeWrite(ctx context.Context, key string) (context.Context, *writeProbe) {
	if c.announcer == nil {
		return ctx, nil
	}
	p := &writeProbe{announcer: c.announcer, reflector: c.reflector}
	if c.ledger != nil {
		p.ledger, p.key = c.ledger, c.etcdKey(key)
	}
	return context.WithValue(ctx, writeProbeKey{}, p), p
}

// sending marks a write request about to be sent. An attempt before it,
// if any, was refused: it wrote nothing.
func (p *writeProbe) sending() {
	if p == nil {
		return
	}
	p.w.Failed()
	p.w = p.announcer.WriteStarting()
	if !p.sent {
		p.reflector.WriteSending()
		p.ticket = p.ledger.Sending()
		p.sent = true
	}
}

// retrying withdraws the write of an attempt the store starts over.
func (p *writeProbe) retrying() {
	if p == nil {
		return
	}
	p.w.Failed()
	p.w = nil
	if p.sent {
		p.reflector.WriteEnded(0)
		p.ledger.Ended(p.ticket, 0, "")
		p.sent = false
	}
}

// abandon ends the call's write as failed when end did not run: the store
// (or a function it called back) panicked after the request went out.
// Deferred right after probeWrite, so that a panic cannot leave the write
// in flight for good: the ledger would count it forever and every settle
// would wait out its grace, the reflector would hold single events for an
// answer that never comes, and the oracle would keep waiting for it. A
// no-op after end. The revision is unknown, so the write proves nothing.
func (p *writeProbe) abandon() {
	p.end(errWriteAbandoned, nil, nil)
}

// errWriteAbandoned is end's outcome for a write call that panicked.
var errWriteAbandoned = errors.New("watchcache: write call panicked before it ended")

// end ends the call's write with its outcome.
func (p *writeProbe) end(err error, obj runtime.Object, versioner storage.Versioner) {
	if p == nil {
		return
	}
	var rv uint64
	// The oracle's Write is taken with every send, so a write was sent
	// exactly when sent is set (the Write may be nil: a closed oracle).
	if err == nil && obj != nil && p.sent {
		if v, verr := versioner.ObjectResourceVersion(obj); verr == nil {
			rv = v
		}
	}
	if p.sent {
		p.reflector.WriteEnded(rv)
		// Before the revision answers reads (Succeeded), so that the
		// caches those reads wait on can prove themselves current by it.
		p.ledger.Ended(p.ticket, int64(rv), p.key)
		p.sent = false
	}
	w := p.w
	p.w = nil
	if rv == 0 {
		w.Failed()
		return
	}
	w.Succeeded(int64(rv))
}

// AnnounceWrites wraps the transformer of a resource's etcd3 store so that
// the store's Create and GuaranteedUpdate, called through a Cache, tell the
// cache's revision source when they send a write (WriteAnnouncer). The
// store encrypts a value just before it sends it, and only when it sends
// it. NewStorageDecorator wraps every store's transformer; an embedder that
// builds the store for New itself wraps its own. t nil stands for the
// store's default, identity.NewEncryptCheckTransformer.
func AnnounceWrites(t value.Transformer) value.Transformer {
	if t == nil {
		t = identity.NewEncryptCheckTransformer()
	}
	return announcingTransformer{t}
}

type announcingTransformer struct {
	value.Transformer
}

func (t announcingTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	out, err := t.Transformer.TransformToStorage(ctx, data, dataCtx)
	if err == nil {
		if p, ok := ctx.Value(writeProbeKey{}).(*writeProbe); ok {
			p.sending()
		}
	}
	return out, err
}

// Create implements storage.Interface; it goes to etcd.
func (c *Cache) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	ctx, probe := c.probeWrite(ctx, key)
	defer probe.abandon()
	return c.written(key, probe, c.cfg.Storage.Create(ctx, key, obj, out, ttl), out)
}

// written finishes a write that went to etcd at key and ended with err,
// leaving obj as etcd answered: it ends the write's probe and, if the
// write succeeded, records where the cache will hold obj and raises the
// revision of this cache's newest write. It returns err.
func (c *Cache) written(key string, probe *writeProbe, err error, obj runtime.Object) error {
	probe.end(err, obj, c.cfg.Versioner)
	if err != nil {
		return err
	}
	c.noteWrite(key, obj)
	c.wrote(obj)
	return nil
}

// wrote raises the revision of this cache's newest acknowledged write
// (ownWrite) to obj's, which the store set to the revision etcd committed
// the write at.
func (c *Cache) wrote(obj runtime.Object) {
	rv, err := c.cfg.Versioner.ObjectResourceVersion(obj)
	if err != nil || rv == 0 {
		return
	}
	for {
		cur := c.ownWrite.Load()
		if rv <= cur || c.ownWrite.CompareAndSwap(cur, rv) {
			return
		}
	}
}

// noteWrite remembers key, and where the cache will hold obj, if obj was
// written at a key that is not its KeyFunc key (see internal/misplaced). It
// runs before the write returns to its caller, so that every read that
// starts after the write sees the record.
func (c *Cache) noteWrite(key string, obj runtime.Object) {
	stored, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil {
		return
	}
	cached, err := c.cfg.KeyFunc(obj)
	switch {
	case err != nil:
		c.misplaced.Add(stored)
	case cached != stored:
		c.misplaced.Add(stored, cached)
	default:
		return
	}
	klog.V(2).InfoS("freshcache: an object was written at a key that is not its KeyFunc key; reads of it go to etcd",
		"resource", c.cfg.GroupResource.String(), "key", stored, "keyFuncKey", cached, "keyFuncErr", err)
}

// suggestion returns a private copy of the cached object at key, which etcd3
// uses to skip a read (and retries if it is stale), or nil.
func (c *Cache) suggestion(key string) runtime.Object {
	if !c.Ready() {
		return nil
	}
	preparedKey, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil {
		return nil
	}
	if o, ok := c.snapshot().Get(preparedKey); ok {
		return o.Obj.DeepCopyObject()
	}
	return nil
}

// Delete implements storage.Interface; it goes to etcd with the cached
// object as the suggestion, as upstream's cacher does.
func (c *Cache) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions, validateDeletion storage.ValidateObjectFunc, _ runtime.Object, opts storage.DeleteOptions) error {
	ctx, probe := c.probeWrite(ctx, key)
	defer probe.abandon()
	validate := validateDeletion
	if probe != nil && validateDeletion != nil {
		// The store sends the deletion as soon as the validator agrees.
		validate = func(ctx context.Context, obj runtime.Object) error {
			if err := validateDeletion(ctx, obj); err != nil {
				return err
			}
			probe.sending()
			return nil
		}
	}
	err := c.cfg.Storage.Delete(ctx, key, out, preconditions, validate, c.suggestion(key), opts)
	// The cache deletes whatever it holds at out's KeyFunc key, which is
	// not the deleted key if out was misplaced.
	return c.written(key, probe, err, out)
}

// GuaranteedUpdate implements storage.Interface; it goes to etcd with the
// cached object as the suggestion.
func (c *Cache) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	ctx, probe := c.probeWrite(ctx, key)
	defer probe.abandon()
	update := tryUpdate
	if probe != nil {
		update = func(in runtime.Object, meta storage.ResponseMeta) (runtime.Object, *uint64, error) {
			probe.retrying()
			return tryUpdate(in, meta)
		}
	}
	err := c.cfg.Storage.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, update, c.suggestion(key))
	return c.written(key, probe, err, destination)
}
