package watchcache

import (
	"context"
	"time"

	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

// retryAfterSeconds is the Retry-After of "too large resource version" and
// "not ready" answers, as upstream uses.
const retryAfterSeconds = 1

// progressInterval is how often a progress request is repeated while
// somebody waits and no notification came back (etcd may drop a request
// that arrives while the stream is not yet synced).
const progressInterval = 100 * time.Millisecond

// waitFresh blocks until the cache revision is at least rv, ctx is done,
// the cache stops, or ConsistentReadTimeout passes (then it returns
// storage.NewTooLargeResourceVersionError, as upstream does). While it
// waits it asks etcd for progress notifications, so that an idle resource
// still catches up with the global revision.
func (c *Cache) waitFresh(ctx context.Context, rv uint64) error {
	if c.RV() >= rv {
		return nil
	}
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	c.kickProgress()
	timer := c.opts.Clock.NewTimer(c.opts.ConsistentReadTimeout)
	defer timer.Stop()
	for {
		changed := c.changed()
		if c.RV() >= rv {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stop:
			return ErrStopped
		case <-timer.C():
			return storage.NewTooLargeResourceVersionError(rv, c.RV(), retryAfterSeconds)
		}
	}
}

func (c *Cache) kickProgress() {
	select {
	case c.progressKick <- struct{}{}:
	default:
	}
}

// runProgressRequester sends RequestWatchProgress on the cache's stream when
// kicked, and repeats it every progressInterval while waiters remain. At
// most one request is in flight.
func (c *Cache) runProgressRequester() {
	ticker := c.opts.Clock.NewTicker(progressInterval)
	defer ticker.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.progressKick:
		case <-ticker.C():
			if c.waiters.Load() == 0 {
				continue
			}
		}
		if !c.Ready() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.reflector.RequestProgress(ctx); err != nil {
			klog.V(4).InfoS("freshcache: progress request failed", "resource", c.cfg.GroupResource.String(), "err", err)
		}
		cancel()
	}
}
