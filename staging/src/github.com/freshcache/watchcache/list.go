package watchcache

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/freshread"
	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/listing"
	"github.com/freshcache/watchcache/internal/plan"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/metrics"
)

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
		opts = listing.Quorum(opts)
	}
	return c.fresh.Etcd(ctx, func() error { return c.cfg.Storage.GetList(ctx, key, opts, listObj) })
}

// GetList implements storage.Interface. internal/plan decides where the
// LIST is served from; this carries it out. internal/listing parses the
// request and fills the answer from a snapshot.
func (c *Cache) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	req, err := listing.Parse(c.prefix, key, c.cfg.Versioner, opts)
	if err != nil {
		return err
	}
	pr := req.Plan(opts)
	pr.Misplaced = c.misplaced.Touches(req.Key, req.End(opts.Recursive))
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
			return c.fresh.FallBack(ctx, metrics.VerbList, p.Requested(), listing.Cost(c.snapshot(), req, opts), func() error {
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
	lister := listing.Lister{Versioner: c.cfg.Versioner, ShardInfo: c.opts.shardedLists}
	return lister.FromSnapshot(ctx, snap, req, opts, listObj)
}
