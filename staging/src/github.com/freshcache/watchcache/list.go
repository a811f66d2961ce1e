package watchcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/history"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/store"
)

// listPlan is how GetList will answer.
type listPlan int

const (
	planDelegate   listPlan = iota // ask etcd
	planLatest                     // newest snapshot (rv=0, gate off)
	planNotOlder                   // newest snapshot once RV >= rv
	planExact                      // the snapshot at exactly rv
	planConsistent                 // newest snapshot after the freshness wait
)

// readGates are the gates that shape LIST planning, resolved once when the
// cache is built.
type readGates struct {
	// consistent: ConsistentReadsFromCache. rv="" (and continuations of
	// consistent lists) wait for freshness and are served from the cache.
	consistent bool
	// freshZero: FreshResourceVersionZero. rv=0 does the same.
	freshZero bool
	// snapshots: upstream's ListFromCacheSnapshot. When off, Exact reads
	// and continuations go to etcd, as upstream's cacher does then.
	snapshots bool
}

// planList decides how to serve a LIST. It mirrors upstream's delegator
// decisions, with freshcache's gates for rv="" and rv=0.
func planList(opts storage.ListOptions, rv uint64, continueRV int64, g readGates) listPlan {
	if opts.Recursive && opts.Predicate.Continue != "" {
		switch {
		case !g.snapshots:
			return planDelegate
		case continueRV > 0:
			return planExact
		case g.consistent:
			// A continuation of a consistent list (negative RV in the
			// token) is itself a consistent read.
			return planConsistent
		}
		return planDelegate
	}
	exact := planExact
	if !g.snapshots {
		exact = planDelegate
	}
	switch opts.ResourceVersionMatch {
	case metav1.ResourceVersionMatchExact:
		return exact
	case metav1.ResourceVersionMatchNotOlderThan:
		if opts.ResourceVersion == "0" {
			if g.freshZero {
				return planConsistent
			}
			return planLatest
		}
		return planNotOlder
	}
	switch {
	case opts.ResourceVersion == "":
		if g.consistent {
			return planConsistent
		}
		return planDelegate
	case opts.ResourceVersion == "0" || rv == 0:
		if g.freshZero {
			return planConsistent
		}
		return planLatest
	case opts.Predicate.Limit > 0 && opts.Recursive:
		// Legacy semantics: a limit with an RV lists at exactly that RV.
		return exact
	default:
		return planNotOlder
	}
}

// listRequest is a validated LIST.
type listRequest struct {
	// key is the prepared key (a prefix ending in "/" when recursive).
	key string
	// continueKey is where a continued list resumes, or "".
	continueKey string
	plan        listPlan
	// rv is the revision for planNotOlder and planExact.
	rv uint64
}

// end is the exclusive end of the request's key range.
func (r listRequest) end(recursive bool) string {
	if !recursive {
		return r.key + "\x00"
	}
	return store.PrefixEnd(r.key)
}

// parseListRequest validates a LIST as upstream does and decides how to
// serve it. Client mistakes come back as BadRequest; it never panics.
func parseListRequest(prefix, key string, v storage.Versioner, opts storage.ListOptions, g readGates) (listRequest, error) {
	preparedKey, err := storage.PrepareKey(prefix, key, opts.Recursive)
	if err != nil {
		return listRequest{}, err
	}
	if opts.Predicate.Limit < 0 {
		return listRequest{}, apierrors.NewBadRequest(fmt.Sprintf("invalid limit: %d", opts.Predicate.Limit))
	}
	withRev, continueKey, err := storage.ValidateListOptions(preparedKey, v, opts)
	if err != nil {
		if !apierrors.IsBadRequest(err) {
			err = apierrors.NewBadRequest(err.Error())
		}
		return listRequest{}, err
	}
	rv, err := v.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return listRequest{}, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	r := listRequest{key: preparedKey, continueKey: continueKey, plan: planList(opts, rv, withRev, g), rv: rv}
	if r.plan == planExact && withRev > 0 {
		r.rv = uint64(withRev)
	}
	return r, nil
}

// GetList implements storage.Interface.
func (c *Cache) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	req, err := parseListRequest(c.prefix, key, c.cfg.Versioner, opts, c.gates)
	if err != nil {
		return err
	}
	if req.plan == planDelegate {
		return c.cfg.Storage.GetList(ctx, key, opts, listObj)
	}
	if c.misplaced.touches(req.key, req.end(opts.Recursive)) {
		// The cache cannot hold what etcd has in this range. etcd answers
		// as asked, except that rv=0 keeps its one-piece answer.
		if opts.ResourceVersion == "0" {
			opts.Predicate.Limit = 0
		}
		return c.cfg.Storage.GetList(ctx, key, opts, listObj)
	}
	if err := c.readiness.check(); err != nil {
		// KEP-4568: delegate what etcd can answer cheaply, 429 the rest,
		// with a Retry-After that grows with the downtime.
		if shouldDelegateWhileNotReady(opts) {
			return c.cfg.Storage.GetList(ctx, key, opts, listObj)
		}
		return err
	}

	var snap *store.Snapshot
	switch req.plan {
	case planLatest:
		snap = c.snapshot()
	case planConsistent:
		requested := metrics.RequestedConsistent
		if opts.ResourceVersion == "0" {
			requested = metrics.RequestedZero
		}
		where, err := c.freshRead(ctx, metrics.VerbList, requested, 0)
		if err != nil {
			return err
		}
		if where == fromEtcd {
			return c.cfg.Storage.GetList(ctx, key, quorum(opts), listObj)
		}
		snap = c.snapshot()
	case planNotOlder:
		where, err := c.freshRead(ctx, metrics.VerbList, metrics.RequestedNotOlderThan, req.rv)
		if err != nil {
			return err
		}
		if where == fromEtcd {
			return c.cfg.Storage.GetList(ctx, key, opts, listObj)
		}
		snap = c.snapshot()
	case planExact:
		if compacted := c.cfg.Storage.CompactRevision(); compacted > 0 && req.rv < uint64(compacted) {
			// etcd has forgotten this revision; answer as etcd does.
			return c.cfg.Storage.GetList(ctx, key, opts, listObj)
		}
		if c.disabledReason != "" && req.rv > c.RV() {
			// Waiting would rest on events alone (progress notifications
			// are not trusted): etcd answers at once, as upstream's
			// cacher delegates a not-yet-fresh Exact read when etcd
			// cannot serve progress requests.
			return c.cfg.Storage.GetList(ctx, key, opts, listObj)
		}
		if err := c.waitFresh(ctx, req.rv, 0); err != nil {
			return err
		}
		snap, err = c.history.SnapshotAt(req.rv, c.RV())
		if errors.Is(err, history.ErrExpired) {
			return c.cfg.Storage.GetList(ctx, key, opts, listObj)
		}
		if err != nil {
			return err
		}
	}
	return c.listFromSnapshot(ctx, snap, req.key, req.continueKey, opts, listObj)
}

// quorum turns a LIST into the consistent read etcd serves for rv="":
// rv=0 (under FreshResourceVersionZero) means "any", and etcd's newest
// state is one of "any". A continuation keeps its token. An rv=0 LIST
// keeps its unpaginated answer (see listLimit): etcd would honour the
// limit, and a paginated answer to rv=0 makes client-go's reflector page
// every later relist.
func quorum(opts storage.ListOptions) storage.ListOptions {
	if opts.ResourceVersion == "0" {
		opts.ResourceVersion = ""
		opts.ResourceVersionMatch = ""
		opts.Predicate.Limit = 0
	}
	return opts
}

// listLimit is the page size a LIST served from the cache honours. As
// upstream's cacher (kubernetes#108003), a LIST at rv=0, whatever its
// resourceVersionMatch, ignores the limit and answers in one piece.
// client-go's reflector depends on it: when its initial rv=0 list comes
// back paginated it concludes that the watch cache is off and pages every
// later relist, at rv=<last seen>&limit=500, which are Exact reads that go
// to etcd once that revision has left the history window. A non-recursive
// LIST (one key) has no pages.
func listLimit(opts storage.ListOptions) int64 {
	if !opts.Recursive || opts.ResourceVersion == "0" || opts.Predicate.Limit < 0 {
		return 0
	}
	return opts.Predicate.Limit
}

func shouldDelegateWhileNotReady(opts storage.ListOptions) bool {
	p := opts.Predicate
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty()) && p.Limit > 0
}

// listFromSnapshot fills listObj from snap. Each item is a shallow copy of
// the cached object, as upstream's cacher hands out: the item's own fields
// are the caller's, but maps, slices and pointers inside it are shared with
// the cache and must be treated as read-only (deep-copying every item cost
// ~7x in LIST throughput; see docs/results/core.md).
func (c *Cache) listFromSnapshot(ctx context.Context, snap *store.Snapshot, preparedKey, continueKey string, opts storage.ListOptions, listObj runtime.Object) error {
	listPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	listVal, err := conversion.EnforcePtr(listPtr)
	if err != nil {
		return err
	}
	if listVal.Kind() != reflect.Slice {
		return fmt.Errorf("watchcache: need a pointer to slice, got %v", listVal.Kind())
	}
	pred := opts.Predicate
	limit := listLimit(opts)

	var (
		selected []*store.Object
		hasMore  bool
		scanned  int64
	)
	visit := func(o *store.Object) bool {
		if limit > 0 && int64(len(selected)) >= limit {
			hasMore = true
			return false
		}
		scanned++
		if c.selects(&pred, o) {
			selected = append(selected, o)
		}
		return true
	}
	if !opts.Recursive {
		if o, ok := snap.Get(preparedKey); ok {
			visit(o)
		}
	} else {
		from, to := preparedKey, store.PrefixEnd(preparedKey)
		if continueKey != "" {
			from = continueKey
		}
		if !c.rangeByIndex(ctx, snap, &pred, from, to, visit) {
			snap.Range(from, to, visit)
		}
	}

	listVal.Set(reflect.MakeSlice(listVal.Type(), len(selected), len(selected)))
	for i, o := range selected {
		listVal.Index(i).Set(reflect.ValueOf(o.Obj).Elem())
	}
	var cont string
	var remaining *int64
	if hasMore {
		last := selected[len(selected)-1].Key
		from := preparedKey
		if continueKey != "" {
			from = continueKey
		}
		// Every object in range counts when there is no selector, which is
		// the only case where remainingItemCount is reported.
		total := int64(0)
		if pred.Empty() {
			total = int64(snap.CountRange(from, store.PrefixEnd(preparedKey)))
		}
		cont, remaining, err = storage.PrepareContinueToken(last, preparedKey, int64(snap.RV()), total, true, opts)
		if err != nil {
			return err
		}
	}
	if err := c.cfg.Versioner.UpdateList(listObj, snap.RV(), cont, remaining); err != nil {
		return err
	}
	if c.opts.shardedLists {
		// Where upstream's cacher does it: after the list metadata, for
		// every LIST it answers. The etcd3 store does it for delegated ones.
		pred.SetShardInfoOnList(listObj)
	}
	return nil
}

// selects reports whether o passes the predicate's label, field and shard
// selectors (the key range is the caller's business).
func (c *Cache) selects(pred *storage.SelectionPredicate, o *store.Object) bool {
	if !store.MatchesAttributes(pred, o.Labels, o.Fields) {
		return false
	}
	if pred.ShardSelector != nil && !pred.ShardSelector.Empty() {
		ok, err := pred.MatchesSharding(o.Obj)
		return err == nil && ok
	}
	return true
}

// rangeByIndex iterates through a secondary index when the selector pins
// one. It reports false when no index applies.
func (c *Cache) rangeByIndex(ctx context.Context, snap *store.Snapshot, pred *storage.SelectionPredicate, from, to string, visit func(*store.Object) bool) bool {
	for _, m := range pred.MatcherIndex(ctx) {
		if snap.HasIndex(m.IndexName) {
			return snap.RangeIndex(m.IndexName, m.Value, from, to, visit)
		}
	}
	return false
}
