package reflector_test

import (
	"context"
	"slices"
	"testing"

	"github.com/freshcache/watchcache/metrics"
)

// advance moves the sink's revision as the cache's catch-up on the ledger
// of own writes does, from outside the reflector.
func (s *recordingSink) advance(rv uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moved(rv)
}

// TestEventBehindAWrongAdvance: the sink is moved past two revisions from
// outside the reflector, as a proof from the ledger of own writes would
// move it, and the proof is wrong: both revisions hold pods (etcd restored
// under a running apiserver, a store that writes two keys in one
// transaction). The reflector has received neither revision, so their
// events contradict the sink's revision: it must relist, with its own
// reason, and end up holding both pods, not skip them as applied.
func TestEventBehindAWrongAdvance(t *testing.T) {
	ctx := context.Background()
	e, _ := following(ctx, t)
	_, rv := e.etcdState(ctx, t)
	e.sink.advance(rv + 2)
	e.create(ctx, t, "behind-1")
	e.create(ctx, t, "behind-2")
	e.converge(ctx, t)
	e.checkMonotonic(t)
	if _, _, reasons, _ := e.counts(); !slices.Contains(reasons, metrics.RelistMovedPastEvent) {
		t.Fatalf("relist reasons %v, want %q", reasons, metrics.RelistMovedPastEvent)
	}
}
