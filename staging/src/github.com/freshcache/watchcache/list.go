package watchcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/freshread"
	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/plan"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/metrics"
)

// listRequest is a validated LIST.
type listRequest struct {
	// key is the prepared key (a prefix ending in "/" when recursive).
	key string
	// continueKey is where a continued list resumes, or "".
	continueKey string
	// rv is the request's resourceVersion, parsed; continueRV the
	// revision in its continue token (negative: a consistent list's).
	rv         uint64
	continueRV int64
}

// end is the exclusive end of the request's key range.
func (r listRequest) end(recursive bool) string {
	if !recursive {
		return r.key + "\x00"
	}
	return store.PrefixEnd(r.key)
}

// planRequest is the request as the planner takes it.
func (r listRequest) planRequest(opts storage.ListOptions) plan.Request {
	p := opts.Predicate
	return plan.Request{
		Verb:            plan.List,
		ResourceVersion: opts.ResourceVersion,
		RV:              r.rv,
		Match:           opts.ResourceVersionMatch,
		Limit:           p.Limit,
		Recursive:       opts.Recursive,
		Continue:        p.Continue,
		ContinueRV:      r.continueRV,
		Selective:       (p.Label != nil && !p.Label.Empty()) || (p.Field != nil && !p.Field.Empty()),
	}
}

// parseListRequest validates a LIST as upstream does. Client mistakes come
// back as BadRequest; it never panics.
func parseListRequest(prefix, key string, v storage.Versioner, opts storage.ListOptions) (listRequest, error) {
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
	return listRequest{key: preparedKey, continueKey: continueKey, rv: rv, continueRV: withRev}, nil
}

// planState is what the planner needs to know of the cache right now.
func (c *Cache) planState() plan.State {
	return plan.State{
		Ready:     c.Ready(),
		Untrusted: c.disabledReason != "",
		RV:        c.RV(),
		Compacted: c.cfg.Storage.CompactRevision,
	}
}

// listFromEtcd delegates a LIST the plan (or a fallback) sends to etcd: as
// asked, except that an rv=0 LIST the version guard sends there becomes
// the quorum read rv="" ("any" allows it) and keeps its one-piece answer.
// (A fresh rv=0 LIST never falls back: zeroList.)
func (c *Cache) listFromEtcd(ctx context.Context, key string, p plan.Plan, opts storage.ListOptions, listObj runtime.Object) error {
	if p.Guarded {
		c.metrics.Read(metrics.VerbList, p.Requested(), metrics.OutcomeFallback)
	}
	if p.Zero && p.Guarded {
		opts = quorum(opts)
	}
	return c.fresh.Etcd(ctx, func() error { return c.cfg.Storage.GetList(ctx, key, opts, listObj) })
}

// GetList implements storage.Interface. internal/plan decides where the
// LIST is served from; this carries it out.
func (c *Cache) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	req, err := parseListRequest(c.prefix, key, c.cfg.Versioner, opts)
	if err != nil {
		return err
	}
	pr := req.planRequest(opts)
	pr.Misplaced = c.misplaced.Touches(req.key, req.end(opts.Recursive))
	p := plan.For(pr, c.gates, c.planState())
	if p.IgnoreLimit {
		opts.Predicate.Limit = 0
	}

	var snap *store.Snapshot
	switch p.Source {
	case plan.Etcd:
		return c.listFromEtcd(ctx, key, p, opts, listObj)
	case plan.NotReady:
		return c.readiness.Refusal()
	case plan.Snapshot:
		snap = c.snapshot()
	case plan.Fresh, plan.NotOlder:
		where, err := c.fresh.Wait(ctx, plan.List, p)
		if err != nil {
			return err
		}
		if where == freshread.FromEtcd {
			return c.fresh.FallBack(ctx, metrics.VerbList, p.Requested(), c.listCost(req, opts), func() error {
				return c.cfg.Storage.GetList(ctx, key, opts, listObj)
			})
		}
		snap = c.snapshot()
	case plan.Exact:
		if err := c.fresh.WaitFor(ctx, p.RV, 0); err != nil {
			return err
		}
		snap, err = c.history.SnapshotAt(p.RV, c.RV())
		if errors.Is(err, history.ErrExpired) {
			return c.fresh.Etcd(ctx, func() error { return c.cfg.Storage.GetList(ctx, key, opts, listObj) })
		}
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("watchcache: LIST planned as %v", p.Source)
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

// listCost is how many objects etcd reads for a LIST: the objects of its
// key range (as the cache knows them), or its limit when nothing filters
// the range (etcd reads on past the limit to fill a filtered page).
func (c *Cache) listCost(req listRequest, opts storage.ListOptions) int64 {
	if !opts.Recursive {
		return 1
	}
	n := int64(c.snapshot().CountRange(req.key, req.end(true)))
	if l := opts.Predicate.Limit; l > 0 && l < n && opts.Predicate.Empty() {
		n = l
	}
	return max(n, 1)
}
