package ready

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// State is whether the cache's state is current. While pending, LISTs get
// 429 with a Retry-After that grows with the downtime (or go to etcd when
// etcd can answer them cheaply), GETs go to etcd and watches get 429; the
// plan decides which, from IsReady.
type State struct {
	clock clock.PassiveClock

	mu struct {
		sync.Mutex
		ready bool
		// since is when the state last changed.
		since time.Time
		// err is why the cache is pending, if known.
		err error
		// became is closed when the cache becomes ready, and replaced when
		// it goes back to pending.
		became chan struct{}
	}
}

// New returns a pending State whose downtime is measured on clk.
func New(clk clock.PassiveClock) *State {
	r := &State{clock: clk}
	r.mu.since = clk.Now()
	r.mu.became = make(chan struct{})
	return r
}

// Set moves the state to ready or to pending (with the cause). It reports
// whether the state changed.
func (r *State) Set(ready bool, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.err = err
	if ready == r.mu.ready {
		return false
	}
	r.mu.ready = ready
	r.mu.since = r.clock.Now()
	if ready {
		close(r.mu.became)
	} else {
		r.mu.became = make(chan struct{})
	}
	return true
}

// IsReady reports whether the state is current.
func (r *State) IsReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.ready
}

// check returns nil when ready; otherwise a 429 whose Retry-After grows
// with the time spent pending.
func (r *State) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.ready {
		return nil
	}
	msg := "storage is (re)initializing"
	if r.mu.err != nil {
		msg = fmt.Sprintf("%s: %v", msg, r.mu.err)
	}
	return apierrors.NewTooManyRequests(msg, retryAfterWhilePending(r.clock.Since(r.mu.since)))
}

// Refusal is the 429 of a read refused because the plan found the cache
// pending.
func (r *State) Refusal() error {
	if err := r.check(); err != nil {
		return err
	}
	// Ready again since the plan was made; the client retries at once
	// (1 s, the shortest Retry-After).
	return apierrors.NewTooManyRequests("storage is (re)initializing", 1)
}

// Wait blocks until the cache is ready, ctx is done or stop is closed. It
// returns nil, ctx.Err(), or stopped (the cache's ErrStopped) once stop is
// closed.
func (r *State) Wait(ctx context.Context, stop <-chan struct{}, stopped error) error {
	for {
		r.mu.Lock()
		ready, became := r.mu.ready, r.mu.became
		r.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-became:
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return stopped
		}
	}
}

// retryAfterWhilePending is the Retry-After, in seconds, of a read refused
// because the cache is pending: 1 s at first, growing exponentially with
// the downtime to 30 s after about a minute, as upstream's cacher does, so
// that clients back off while etcd is in trouble and return quickly after
// a short relist.
func retryAfterWhilePending(downtime time.Duration) int {
	s := math.Exp(0.06 * downtime.Seconds())
	return int(math.Min(30, math.Max(1, s)))
}
