package reflector

// The list: the whole resource at one revision, through the etcd3 store.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// list lists the resource and installs the state in the sink, for reason
// (metrics.Relist*). The list's revision is then what the reflector has
// received (received.go).
func (r *Reflector) list(ctx context.Context, reason string) error {
	// A relist asked for before this one is answered by it.
	select {
	case <-r.relist:
	default:
	}
	objs, rv, err := r.listStore(ctx)
	if err != nil {
		return err
	}
	if have := r.cfg.Sink.RV(); rv < have {
		return fmt.Errorf("%w: listed at %d, cache at %d", ErrBackInTime, rv, have)
	}
	if err := r.cfg.Sink.Replace(objs, rv, reason); err != nil {
		return err
	}
	r.untrusted.rv, r.untrusted.keys = 0, nil
	r.received = rv
	r.setErr(nil)
	r.listedOnce.Do(func() { close(r.listed) })
	return nil
}

// listStore lists the resource through the etcd3 store, in pages.
func (r *Reflector) listStore(ctx context.Context) ([]runtime.Object, uint64, error) {
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
			return nil, 0, fmt.Errorf("list %s: %w", r.cfg.Prefix, err)
		}
		// Each item gets its own allocation (a shallow copy out of the
		// list's Items array). Otherwise every cached object would keep the
		// whole page's array alive, including the slack capacity it grew
		// with while etcd3 appended to it (~15% of a pod's top-level size).
		items, err := meta.ExtractListWithAlloc(listObj)
		if err != nil {
			return nil, 0, err
		}
		objs = append(objs, items...)
		lm, err := meta.ListAccessor(listObj)
		if err != nil {
			return nil, 0, err
		}
		if rv == 0 {
			rv, err = r.cfg.Versioner.ParseResourceVersion(lm.GetResourceVersion())
			if err != nil {
				return nil, 0, err
			}
		}
		cont = lm.GetContinue()
		if cont == "" {
			return objs, rv, nil
		}
	}
}
