package watchcache

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// Get implements storage.Interface. rv="" (a consistent read) goes to etcd
// until the freshness protocol lands, as does any Get before the cache is
// ready (KEP-4568). rv=0 is the newest cached state; rv=N waits until the
// cache has reached N.
func (c *Cache) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	if opts.ResourceVersion == "" || !c.Ready() {
		return c.cfg.Storage.Get(ctx, key, opts, objPtr)
	}
	preparedKey, err := storage.PrepareKey(c.prefix, key, false)
	if err != nil {
		return err
	}
	rv, err := c.cfg.Versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	objVal, err := conversion.EnforcePtr(objPtr)
	if err != nil {
		return err
	}
	if err := c.waitFresh(ctx, rv); err != nil {
		return err
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
	cp := o.Obj.DeepCopyObject()
	if reflect.TypeOf(cp) != reflect.TypeOf(objPtr) {
		return apierrors.NewInternalError(&typeMismatch{want: objPtr, got: cp})
	}
	objVal.Set(reflect.ValueOf(cp).Elem())
	return nil
}

type typeMismatch struct{ want, got runtime.Object }

func (e *typeMismatch) Error() string {
	return "watchcache: cached object is " + reflect.TypeOf(e.got).String() + ", caller asked for " + reflect.TypeOf(e.want).String()
}
