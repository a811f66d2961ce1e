package storage

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// ClosedLoop runs n closed-loop workers until deadline, or until ctx ends:
// each calls op again as soon as it returns, with a random source of its
// own (seeded by the clock and the worker's index) and a result of its
// own, and merge folds the workers' results together as they stop. The
// apiserver benchmark's clients run the same loop.
func ClosedLoop[R any](ctx context.Context, n int, deadline time.Time, op func(rnd *rand.Rand, local *R), merge func(into *R, from R)) R {
	var (
		mu  sync.Mutex
		out R
		wg  sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			var local R
			for time.Now().Before(deadline) && ctx.Err() == nil {
				op(rnd, &local)
			}
			mu.Lock()
			merge(&out, local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
