package etcdload

import (
	"context"
	"math/rand/v2"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
)

// PutFunc writes object i of a data set.
type PutFunc func(ctx context.Context, i int) error

// Load calls put for every i in [0, n), from writers goroutines at once,
// each taking the next index not yet taken. The first error cancels the
// context the other calls get, and Load returns it once they have
// returned.
func Load(ctx context.Context, n, writers int, put PutFunc) error {
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range writers {
		g.Go(func() error {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := put(gctx, i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// UpdateOptions shape a steady load of updates.
type UpdateOptions struct {
	// PerSec is the updates per second; with 0 or less there are none.
	PerSec float64
	// Objects is the data set's size: every update is of a random index
	// in [0, Objects).
	Objects int
	// Seed picks the indexes: the same seed, the same sequence.
	Seed uint64
}

// Counts is what Update did so far. It may be read while Update runs, and
// shared by several.
type Counts struct {
	done, failed atomic.Int64
}

// Load returns the updates done and those that failed.
func (c *Counts) Load() (done, failed int64) { return c.done.Load(), c.failed.Load() }

// Update calls put for random indexes at o.PerSec until ctx ends, one
// call at a time: a call that blocks (a stalled etcd) holds the next ones
// back rather than letting them pile up. Each call counts in c as done
// or, when it fails while ctx is live, as failed; a call cut by ctx's end
// counts as neither. With no rate, Update only waits for ctx to end.
func Update(ctx context.Context, o UpdateOptions, put PutFunc, c *Counts) {
	if o.PerSec <= 0 {
		<-ctx.Done()
		return
	}
	lim := rate.NewLimiter(rate.Limit(o.PerSec), 1)
	r := rand.New(rand.NewPCG(o.Seed, 7))
	for lim.Wait(ctx) == nil {
		if err := put(ctx, r.IntN(o.Objects)); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.failed.Add(1)
			continue
		}
		c.done.Add(1)
	}
}
