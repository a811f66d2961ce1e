package etcdload

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	errWrite := errors.New("etcd said no")
	for name, tc := range map[string]struct {
		n, writers int
		failAt     int // -1: no put fails
		wantErr    error
	}{
		"nothing":                {n: 0, writers: 4, failAt: -1},
		"one writer":             {n: 50, writers: 1, failAt: -1},
		"many writers":           {n: 1000, writers: 16, failAt: -1},
		"more writers than data": {n: 3, writers: 16, failAt: -1},
		"first error stops it":   {n: 1000, writers: 4, failAt: 10, wantErr: errWrite},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			calls := map[int]int{}
			err := Load(context.Background(), tc.n, tc.writers, func(_ context.Context, i int) error {
				mu.Lock()
				calls[i]++
				mu.Unlock()
				if i == tc.failAt {
					return errWrite
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Load = %v, want %v", err, tc.wantErr)
			}
			for i, c := range calls {
				if i < 0 || i >= tc.n || c != 1 {
					t.Errorf("index %d written %d times", i, c)
				}
			}
			if tc.wantErr == nil && len(calls) != tc.n {
				t.Errorf("%d of %d indexes written", len(calls), tc.n)
			}
		})
	}
}

func TestLoadCancelsTheOthersOnError(t *testing.T) {
	errWrite := errors.New("etcd said no")
	err := Load(context.Background(), 2, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			return errWrite
		}
		<-ctx.Done() // the other writer's put waits until the first fails
		return ctx.Err()
	})
	if !errors.Is(err, errWrite) {
		t.Fatalf("Load = %v, want the first error", err)
	}
}

// updates runs Update until put has been called calls times and returns
// the indexes put got and the counts.
func updates(t *testing.T, o UpdateOptions, calls int, put func(i int) error) ([]int, int64, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []int
	var c Counts
	Update(ctx, o, func(ctx context.Context, i int) error {
		got = append(got, i)
		if len(got) == calls {
			cancel()
		}
		return put(i)
	}, &c)
	done, failed := c.Load()
	return got, done, failed
}

func TestUpdate(t *testing.T) {
	errOdd := errors.New("odd")
	ok := func(int) error { return nil }
	oddFails := func(i int) error {
		if i%2 == 1 {
			return errOdd
		}
		return nil
	}
	for name, tc := range map[string]struct {
		opts  UpdateOptions
		calls int
		put   func(i int) error
	}{
		"every update done":     {UpdateOptions{PerSec: 1e6, Objects: 100, Seed: 1}, 20, ok},
		"failures are counted":  {UpdateOptions{PerSec: 1e6, Objects: 100, Seed: 1}, 20, oddFails},
		"one object":            {UpdateOptions{PerSec: 1e6, Objects: 1, Seed: 3}, 5, ok},
		"every update fails":    {UpdateOptions{PerSec: 1e6, Objects: 1, Seed: 3}, 5, func(int) error { return errOdd }},
		"a slow rate, one call": {UpdateOptions{PerSec: 1, Objects: 10, Seed: 4}, 1, ok},
	} {
		t.Run(name, func(t *testing.T) {
			got, done, failed := updates(t, tc.opts, tc.calls, tc.put)
			if len(got) != tc.calls {
				t.Fatalf("%d calls, want %d", len(got), tc.calls)
			}
			// The last call returns after its context ended: done when it
			// succeeded, and not failed when it failed.
			var wantDone, wantFailed int64
			for k, i := range got {
				if i < 0 || i >= tc.opts.Objects {
					t.Errorf("index %d outside [0, %d)", i, tc.opts.Objects)
				}
				switch {
				case tc.put(i) == nil:
					wantDone++
				case k < len(got)-1:
					wantFailed++
				}
			}
			if done != wantDone || failed != wantFailed {
				t.Errorf("counts %d done, %d failed; want %d, %d", done, failed, wantDone, wantFailed)
			}
		})
	}
}

func TestUpdateSeedPicksTheSequence(t *testing.T) {
	ok := func(int) error { return nil }
	a, _, _ := updates(t, UpdateOptions{PerSec: 1e6, Objects: 1000, Seed: 1}, 30, ok)
	b, _, _ := updates(t, UpdateOptions{PerSec: 1e6, Objects: 1000, Seed: 1}, 30, ok)
	c, _, _ := updates(t, UpdateOptions{PerSec: 1e6, Objects: 1000, Seed: 2}, 30, ok)
	if !slices.Equal(a, b) {
		t.Errorf("seed 1 gave %v, then %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 gave the same %v", a)
	}
}

func TestUpdateWithoutARateWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var c Counts
	Update(ctx, UpdateOptions{Objects: 10}, func(context.Context, int) error {
		t.Error("put called without a rate")
		return nil
	}, &c)
	if ctx.Err() == nil {
		t.Error("Update returned before its context ended")
	}
	if done, failed := c.Load(); done != 0 || failed != 0 {
		t.Errorf("counts %d, %d", done, failed)
	}
}
