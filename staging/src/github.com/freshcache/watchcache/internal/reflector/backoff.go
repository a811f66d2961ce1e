package reflector

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// LeaderRetryCap bounds the step of a LeaderBackoff.
const LeaderRetryCap = 3 * time.Second

// A LeaderBackoff paces the watches that etcd refuses because it has no
// leader, across every reflector that shares it (Config.LeaderBackoff;
// the caches of one etcd cluster share one). While etcd has no leader
// every watch fails the moment it is opened, so a steady pace per resource
// would multiply by the number of cached resources (a hundred resources at
// LeaderRetry: about a thousand watch opens a second against the member
// that is trying to recover). Instead the step starts at LeaderRetry and
// doubles with every refused watch of any sharer, up to LeaderRetryCap;
// each sharer waits between half the step and the step, so the sharers'
// tries spread out and the first one after the election is soon. The
// first watch that delivers again (an event or a progress notification)
// resets the step and wakes every sharer at once, so one finding the
// leader brings all of them back.
//
// Safe for concurrent use. A nil *LeaderBackoff is not valid; New gives a
// reflector without one its own.
type LeaderBackoff struct {
	// failing is set while the step is above zero: a cheap check for
	// delivered, which runs on every event.
	failing atomic.Bool
	mu      struct {
		sync.Mutex
		step time.Duration
		// recovered is closed, and cleared, when a sharer delivers.
		recovered chan struct{}
	}
}

// NewLeaderBackoff returns a LeaderBackoff with no failure yet.
func NewLeaderBackoff() *LeaderBackoff { return &LeaderBackoff{} }

// failed records a watch refused for want of a leader. It returns how long
// to wait before trying again, and a channel closed as soon as any sharer
// delivers again.
func (b *LeaderBackoff) failed() (time.Duration, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.step == 0 {
		b.mu.step = LeaderRetry
	} else {
		b.mu.step = min(2*b.mu.step, LeaderRetryCap)
	}
	if b.mu.recovered == nil {
		b.mu.recovered = make(chan struct{})
	}
	b.failing.Store(true)
	return wait.Jitter(b.mu.step/2, 1), b.mu.recovered
}

// delivered records that a sharer's watch delivered: etcd has a leader.
func (b *LeaderBackoff) delivered() {
	if !b.failing.Load() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failing.Store(false)
	b.mu.step = 0
	if b.mu.recovered != nil {
		close(b.mu.recovered)
		b.mu.recovered = nil
	}
}
