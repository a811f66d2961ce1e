package listing

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/store"
)

// pageLimit is the page size a LIST served from the cache honours. As
// upstream's cacher (kubernetes#108003), a LIST at rv=0, whatever its
// resourceVersionMatch, ignores the limit and answers in one piece.
// client-go's reflector depends on it: when its initial rv=0 list comes
// back paginated it concludes that the watch cache is off and pages every
// later relist, at rv=<last seen>&limit=500, which are Exact reads that go
// to etcd once that revision has left the history window. A non-recursive
// LIST (one key) has no pages.
func pageLimit(opts storage.ListOptions) int64 {
	if !opts.Recursive || opts.ResourceVersion == "0" || opts.Predicate.Limit < 0 {
		return 0
	}
	return opts.Predicate.Limit
}

// Lister fills the answers of one cache's LISTs.
type Lister struct {
	// Versioner sets the list's resourceVersion and continue token.
	Versioner storage.Versioner
	// ShardInfo: set ListMeta.ShardInfo from the shard selector, as
	// upstream's cacher does under its alpha ShardedListAndWatch gate.
	ShardInfo bool
}

// FromSnapshot fills listObj from snap, for req (Key, ContinueKey). Each
// item is a shallow copy of the cached object, as upstream's cacher hands
// out: the item's own fields
// are the caller's, but maps, slices and pointers inside it are shared with
// the cache and must be treated as read-only (deep-copying every item cost
// ~7x in LIST throughput; see docs/results/core.md).
func (l Lister) FromSnapshot(ctx context.Context, snap *store.Snapshot, req Request, opts storage.ListOptions, listObj runtime.Object) error {
	preparedKey, continueKey := req.Key, req.ContinueKey
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
	limit := pageLimit(opts)

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
		if store.Selects(&pred, o) {
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
		if !rangeByIndex(ctx, snap, &pred, from, to, visit) {
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
	if err := l.Versioner.UpdateList(listObj, snap.RV(), cont, remaining); err != nil {
		return err
	}
	if l.ShardInfo {
		// Where upstream's cacher does it: after the list metadata, for
		// every LIST it answers. The etcd3 store does it for delegated ones.
		pred.SetShardInfoOnList(listObj)
	}
	return nil
}

// rangeByIndex iterates through a secondary index when the selector pins
// one. It reports false when no index applies.
func rangeByIndex(ctx context.Context, snap *store.Snapshot, pred *storage.SelectionPredicate, from, to string, visit func(*store.Object) bool) bool {
	for _, m := range pred.MatcherIndex(ctx) {
		if snap.HasIndex(m.IndexName) {
			return snap.RangeIndex(m.IndexName, m.Value, from, to, visit)
		}
	}
	return false
}
