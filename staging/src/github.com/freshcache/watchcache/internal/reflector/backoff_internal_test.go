package reflector

import (
	"testing"
	"time"
)

// TestLeaderBackoffShared: the step doubles with every refused watch of
// any sharer, up to LeaderRetryCap, each wait lies in [step/2, step), and
// one delivery resets the step and wakes every sharer waiting.
func TestLeaderBackoffShared(t *testing.T) {
	b := NewLeaderBackoff()
	within := func(d, step time.Duration) {
		t.Helper()
		if d < step/2 || d >= step {
			t.Fatalf("wait %v, want in [%v, %v)", d, step/2, step)
		}
	}
	step := LeaderRetry
	d, woken := b.failed() // one sharer
	within(d, step)
	for range 10 { // the others, and again
		step = min(2*step, LeaderRetryCap)
		var ch <-chan struct{}
		d, ch = b.failed()
		within(d, step)
		if ch != woken {
			t.Fatal("sharers wait on different channels")
		}
	}
	if step != LeaderRetryCap {
		t.Fatalf("step %v after 11 failures, want the cap", step)
	}
	b.delivered()
	select {
	case <-woken:
	default:
		t.Fatal("a delivery did not wake the sharers")
	}
	d, _ = b.failed()
	within(d, LeaderRetry)
}
