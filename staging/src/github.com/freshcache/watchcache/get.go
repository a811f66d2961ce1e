package watchcache

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/freshread"
	"github.com/freshcache/watchcache/internal/plan"
	"github.com/freshcache/watchcache/metrics"
)

// Get implements storage.Interface. internal/plan decides where it is
// served from: etcd while the cache is pending (KEP-4568), for a key the
// cache cannot hold (internal/misplaced), and for rv="" with the gates off;
// otherwise the newest snapshot, after the freshness wait for rv="" (and
// rv=0 under FreshResourceVersionZero), once the cache reached N for rv=N,
// and as it is for rv=0.
func (c *Cache) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	rv, err := c.cfg.Versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	preparedKey, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil {
		return err
	}
	p := plan.For(plan.Request{
		Verb: plan.Get, ResourceVersion: opts.ResourceVersion, RV: rv,
		Misplaced: c.misplaced.TouchesKey(preparedKey),
	}, c.gates, c.planState())
	objVal, err := conversion.EnforcePtr(objPtr)
	if err != nil {
		return err
	}
	switch p.Source {
	case plan.Etcd:
		if p.Guarded {
			c.metrics.Read(metrics.VerbGet, p.Requested(), metrics.OutcomeFallback)
			opts.ResourceVersion = "" // a quorum read; rv=0 allows it
		}
		return c.fresh.Etcd(ctx, func() error { return c.cfg.Storage.Get(ctx, key, opts, objPtr) })
	case plan.Fresh, plan.NotOlder:
		where, err := c.fresh.Wait(ctx, plan.Get, p)
		if err != nil {
			return err
		}
		if where == freshread.FromEtcd {
			opts.ResourceVersion = "" // a quorum read; rv=0 allows it
			return c.fresh.FallBack(ctx, metrics.VerbGet, p.Requested(), 1, func() error { return c.cfg.Storage.Get(ctx, key, opts, objPtr) })
		}
	case plan.Snapshot:
	default:
		return fmt.Errorf("watchcache: GET planned as %v", p.Source)
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
