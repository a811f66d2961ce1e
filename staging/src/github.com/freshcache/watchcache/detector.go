package watchcache

import (
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/freshcache/watchcache/internal/consistency"
	"github.com/freshcache/watchcache/metrics"
)

// ErrInconsistent is why a cache whose state differed from etcd's is
// pending until its relist is in.
var ErrInconsistent = errors.New("watchcache: cache differs from etcd")

// newChecker builds the inconsistency detector of c (gate
// CacheInconsistencyDetection); Run starts it with the cache's goroutines.
func (c *Cache) newChecker() *consistency.Checker {
	return consistency.New(consistency.Config{
		Lister:      c.cfg.Storage,
		Prefix:      c.prefix,
		NewListFunc: c.cfg.NewListFunc,
		KeyFunc:     c.cfg.KeyFunc,
		Versioner:   c.cfg.Versioner,
		Target:      c.consistencyTarget,
		Report:      c.consistencyReport,
		PageSize:    c.opts.ListPageSize,
		Period:      c.opts.InconsistencyCheckPeriod,
		Clock:       c.opts.Clock,
	})
}

// consistencyTarget returns the newest state whose revision the cache has
// completely applied, and the count of lists it descends from. It takes
// the state lock once per round, to read both together.
func (c *Cache) consistencyTarget() (consistency.Target, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readiness.IsReady() {
		// Pending: the state is being replaced, and reads do not see it.
		return consistency.Target{}, fmt.Errorf("%w: relisting", consistency.ErrNotReady)
	}
	snap := c.latest.Load()
	if c.disabledReason != "" {
		// Untrusted progress: the reflector applies events one at a time,
		// so the newest revision may be only partly applied. Every
		// revision before the newest event's is complete (etcd delivers
		// in revision order); compare the state at the one before it.
		if last := c.history.Last(); last == snap.RV() && last > c.history.Base() {
			s, err := c.history.SnapshotAt(last-1, last)
			if err != nil {
				return consistency.Target{}, fmt.Errorf("%w: no complete revision in the history: %w", consistency.ErrNotReady, err)
			}
			snap = s
		}
	}
	return consistency.Target{Snapshot: snap, Generation: uint64(c.mu.listed)}, nil
}

// consistencyReport records a round and, on a mismatch, purges the state:
// the cache goes pending (reads get 429 or go to etcd, watchers are
// closed), the reflector drops its watch and a fresh list replaces the
// state.
func (c *Cache) consistencyReport(rep consistency.Report) {
	name := c.cfg.GroupResource.String()
	switch rep.Result {
	case consistency.Match:
		c.metrics.ConsistencyChecked(metrics.CheckMatch)
		klog.V(4).InfoS("freshcache: cache matches etcd", "resource", name, "resourceVersion", rep.RV, "digest", rep.Cache.String(), "pages", rep.Pages)
	case consistency.Skipped:
		c.metrics.ConsistencyChecked(metrics.CheckSkipped)
		klog.V(3).InfoS("freshcache: consistency check skipped", "resource", name, "resourceVersion", rep.RV, "reason", rep.Err)
	case consistency.Mismatch:
		c.metrics.ConsistencyChecked(metrics.CheckMismatch)
		klog.ErrorS(nil, "freshcache: cache differs from etcd at the same revision, purging it and relisting",
			"resource", name, "resourceVersion", rep.RV,
			"cacheDigest", rep.Cache.String(), "etcdDigest", rep.Etcd.String(),
			"cacheCount", rep.Cache.Count, "etcdCount", rep.Etcd.Count,
			"firstDifference", rep.First.String())
		c.purge(rep.Generation, fmt.Errorf("%w at revision %d: %s", ErrInconsistent, rep.RV, rep.First))
	default:
		c.metrics.ConsistencyChecked(metrics.CheckError)
		klog.ErrorS(rep.Err, "freshcache: consistency check failed", "resource", name, "resourceVersion", rep.RV, "pages", rep.Pages)
	}
}

// purge condemns the state a mismatching round compared, unless a list has
// replaced it since (that list purged it already): the cache goes pending
// at once, as the reflector would make it (reads get 429 or go to etcd,
// watchers are closed), so that nothing more is served from it, and the
// reflector is asked to relist.
func (c *Cache) purge(generation uint64, why error) {
	c.mu.Lock()
	if uint64(c.mu.listed) != generation {
		c.mu.Unlock()
		return
	}
	if c.readiness.Set(false, why) {
		c.fanout.TerminateAll(metrics.ReasonRelist)
	}
	c.mu.Unlock()
	c.reflector.Relist(metrics.RelistInconsistent)
}
