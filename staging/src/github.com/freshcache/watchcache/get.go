package watchcache

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/metrics"
)

// Get implements storage.Interface. Any Get before the cache is ready goes
// to etcd (KEP-4568). Then:
//   - rv="": with ConsistentReadsFromCache, the freshness wait and the
//     newest snapshot; without it, etcd (upstream behaviour).
//   - rv=0: with FreshResourceVersionZero, as rv=""; without it, the
//     newest snapshot as it is.
//   - rv=N: the newest snapshot once the cache has reached N.
//
// A key at which the cache and etcd disagree (misplacedKeys) goes to etcd.
func (c *Cache) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	requested := c.consistentClass(opts.ResourceVersion)
	if !c.Ready() || (opts.ResourceVersion == "" && requested == "") {
		return c.cfg.Storage.Get(ctx, key, opts, objPtr)
	}
	preparedKey, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil {
		return err
	}
	if c.misplaced.touchesKey(preparedKey) {
		// The cache cannot hold what etcd has at this key.
		return c.cfg.Storage.Get(ctx, key, opts, objPtr)
	}
	rv, err := c.cfg.Versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	objVal, err := conversion.EnforcePtr(objPtr)
	if err != nil {
		return err
	}
	switch {
	case requested != "":
		where, err := c.freshRead(ctx, metrics.VerbGet, requested, 0)
		if err != nil {
			return err
		}
		if where == fromEtcd {
			opts.ResourceVersion = "" // a quorum read; rv=0 allows it
			return c.cfg.Storage.Get(ctx, key, opts, objPtr)
		}
	case rv > 0:
		if _, err := c.freshRead(ctx, metrics.VerbGet, metrics.RequestedNotOlderThan, rv); err != nil {
			return err
		}
	}
	snap := c.snapshot()
	o, ok := snap.Get(preparedKey)
	if !ok {
		objVal.Set(reflect.Zero(objVal.Type()))
		if opts.IgnoreNotFound {
			return nil
		}
		return storage.NewKeyNotFoundError(preparedKey, int64(snap.RV()))
	}
	// A shallow copy, as LIST items and upstream's cacher: the struct is the
	// caller's, the maps, slices and pointers inside it stay the cache's and
	// are read-only (caller duty in doc.go).
	if reflect.TypeOf(o.Obj) != reflect.TypeOf(objPtr) {
		return apierrors.NewInternalError(&typeMismatch{want: objPtr, got: o.Obj})
	}
	objVal.Set(reflect.ValueOf(o.Obj).Elem())
	return nil
}

type typeMismatch struct{ want, got runtime.Object }

func (e *typeMismatch) Error() string {
	return "watchcache: cached object is " + reflect.TypeOf(e.got).String() + ", caller asked for " + reflect.TypeOf(e.want).String()
}
