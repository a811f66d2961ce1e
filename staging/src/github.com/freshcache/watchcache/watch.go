package watchcache

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/fanout"
	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/plan"
)

// Watch implements storage.Interface.
//
// Resource-version semantics, as upstream's cacher, except that with
// ConsistentReadsFromCache rv="" (and with FreshResourceVersionZero rv=0)
// first waits until the cache is at least as fresh as etcd was when the
// request arrived, and starts from that state:
//   - sendInitialEvents=true: the state at a revision >= the requested one
//     (rv="": etcd's current revision) as ADDED events, then, with
//     AllowWatchBookmarks, the initial-events-end bookmark, then changes.
//   - rv="" or "0" without sendInitialEvents: the current state as ADDED
//     events, then changes (legacy behaviour).
//   - rv="" or "0" with sendInitialEvents=false: changes from now on.
//   - rv=N: every change after N (410 Expired if N left the window).
//
// A watch is never opened on etcd. A consistent watch waits for etcd's
// revision for as long as ctx lasts, as upstream's does, and then up to
// ConsistentReadTimeout for the cache; one that cannot be made fresh gets
// an error (see freshread.Reader.Wait) and client-go falls back to LIST
// and WATCH.
// While consistent reads are disabled (etcd version guard) rv="" and rv=0
// start from the cache's current state, as with the gates off.
func (c *Cache) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	preparedKey, err := storage.PrepareKey(c.prefix, key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	rv, err := c.cfg.Versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	p := plan.For(plan.Request{
		Verb: plan.Watch, ResourceVersion: opts.ResourceVersion, RV: rv,
		SendInitialEvents: opts.SendInitialEvents,
	}, c.gates, c.planState())

	// Reach the revision the watch must start from. From here on errors
	// are reported as a watch ERROR event, as upstream does; a rejected
	// consistent read is a plain 429. A watch is never opened on etcd
	// (freshread.Reader.Wait's contract).
	switch p.Source {
	case plan.NotReady:
		return nil, c.readiness.Refusal()
	case plan.Refuse:
		// A watch-list needs a revision the cache can prove it reached;
		// without trusted progress notifications it could only wait for
		// events. Refused at once, as upstream's cacher does when etcd
		// cannot serve progress requests; client-go falls back to LIST.
		return fanout.ErrorWatcher(fmt.Errorf("a watch stream was requested, but the watch cache of %s cannot serve it: %s", c.cfg.GroupResource, c.disabledReason)), nil
	case plan.Fresh:
		// Start from a snapshot at least as fresh as the request: its
		// initial events, if any, come from it, and so does StartRV. The
		// revision is awaited under ctx (freshread.Reader.Wait), so an
		// etcd member that cannot answer holds the watch, as upstream's,
		// rather than failing it over to the client's rv=0 LIST.
		if _, err := c.fresh.Wait(ctx, plan.Watch, p); err != nil {
			if apierrors.IsTooManyRequests(err) {
				return nil, err
			}
			return waitFailed(ctx, p, err), nil
		}
	case plan.NotOlder:
		if _, err := c.fresh.Wait(ctx, plan.Watch, p); err != nil {
			return waitFailed(ctx, p, err), nil
		}
	case plan.Snapshot:
		if p.EtcdRevision {
			// Gates off: upstream's watch-list semantics, the state at
			// etcd's current revision at least.
			current, err := c.cfg.Storage.GetCurrentResourceVersion(ctx)
			if err != nil {
				return fanout.ErrorWatcher(err), nil
			}
			if current > 0 {
				if _, err := c.fresh.Wait(ctx, plan.Watch, plan.Plan{Source: plan.NotOlder, RV: current}); err != nil {
					return fanout.ErrorWatcher(toAPIError(err)), nil
				}
			}
		}
	default:
		return nil, fmt.Errorf("watchcache: WATCH planned as %v", p.Source)
	}

	spec := fanout.Spec{
		Ctx:       ctx,
		Key:       preparedKey,
		Recursive: opts.Recursive,
		Predicate: opts.Predicate,
		Trigger:   c.trigger(&opts.Predicate),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readiness.IsReady() {
		// Planned while ready, the cache went pending since (the wait
		// above can be long). Registered now, the watcher would get
		// nothing until the relist closes it; refused, the client backs
		// off and comes back. Checked under mu, which Unready holds while
		// it closes the watchers: no watcher slips in between.
		return nil, c.readiness.Refusal()
	}
	current := c.snapshot()
	spec.StartRV = current.RV()
	switch p.Start {
	case plan.WithState:
		spec.Initial = current
		spec.InitialEventsEnd = sendInitial && opts.Predicate.AllowWatchBookmarks
	case plan.FromNow:
		// Changes from now on.
	default:
		if compacted := c.cfg.Storage.CompactRevision(); compacted > 0 && rv < uint64(compacted) {
			// etcd compacted past rv: answer as a watch on etcd would, so a
			// client cannot resume from a revision nobody can replay.
			return fanout.ErrorWatcher(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, compacted))), nil
		}
		backlog, err := c.history.Since(rv)
		if errors.Is(err, history.ErrExpired) {
			return fanout.ErrorWatcher(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, c.history.Base()))), nil
		}
		if err != nil {
			return fanout.ErrorWatcher(err), nil
		}
		spec.Backlog = backlog
		if rv > spec.StartRV {
			// A future revision: skip everything up to it.
			spec.StartRV = rv
		}
	}
	return c.fanout.Add(spec), nil
}

// trigger returns the trigger value pinned by the predicate, if the
// resource has a trigger index and the selector requires an exact match.
func (c *Cache) trigger(p *storage.SelectionPredicate) *string {
	if c.triggerFunc == nil || p.Field == nil {
		return nil
	}
	for _, f := range p.IndexFields {
		if f != c.triggerName {
			continue
		}
		if v, ok := p.Field.RequiresExactMatch(f); ok {
			return &v
		}
	}
	return nil
}

// waitFailed is the watch a client gets when its freshness wait ended in
// err. An rv=0 watch whose client has gone is closed without an event:
// upstream's rv=0 watch never waits, so a cancelled context only closes
// it (the storage conformance suite's WatchContextCancel), and fresh rv=0
// must not turn that into an error. Every other failure is an ERROR event.
func waitFailed(ctx context.Context, p plan.Plan, err error) watch.Interface {
	if p.Zero && ctx.Err() != nil {
		return watch.NewEmptyWatch()
	}
	return fanout.ErrorWatcher(toAPIError(err))
}

// toAPIError turns internal wait errors into client-facing ones. The end
// of the request's context stays as it is, so that the error watcher
// reports it as 500 InternalError: that is what upstream's watch answers
// when the context ends while it reads etcd's revision (its wait for the
// cache ignores the context, ours does not), and what client-go's
// reflector retries as an internal error.
func toAPIError(err error) error {
	if errors.Is(err, ErrStopped) {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	return err
}
