//go:build invariants

package linearizability

import (
	"fmt"
	"testing"
	"time"

	"github.com/freshcache/watchcache/oracle"
)

// TestOwnWritesLinearizableCatchesABrokenLedger is the negative control of
// TestOwnWritesLinearizable: the same run with the ledger broken on
// purpose (oracle.Ledger.Break, invariants builds only) must give the
// checker violations to find. Ignoring the resource's prefix lets the pod
// cache advance past its own pod writes; ignoring the revisions the ledger
// lacks lets it advance past the other member's. Either way a read served
// in between lacks a pod acknowledged before it started. (The reflector
// then sees an event the cache was moved past and relists; reads that
// fail meanwhile are counted, not reported.)
func TestOwnWritesLinearizableCatchesABrokenLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	for _, tc := range []struct {
		name  string
		fault oracle.LedgerFault
	}{
		{"ignores the prefix", oracle.FaultIgnorePrefix},
		{"ignores the gaps", oracle.FaultIgnoreGaps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A run finds 3 to 200 violations here; up to three runs
			// keep a rare quiet one from failing the control.
			for attempt := 1; ; attempt++ {
				seed := uint64(time.Now().UnixNano())
				found, summary := brokenLedgerRun(t, seed, tc.fault)
				t.Logf("seed %d: %s", seed, summary)
				if found {
					return
				}
				if attempt == 3 {
					t.Fatalf("a broken ledger gave the checker no violation in %d runs: the check cannot tell", attempt)
				}
			}
		})
	}
}

// brokenLedgerRun runs runOwnWrites with the ledger broken by fault and
// reports whether the checker found a violation.
func brokenLedgerRun(t *testing.T, seed uint64, fault oracle.LedgerFault) (bool, string) {
	run := runOwnWrites(t, seed, func(l *oracle.Ledger) { l.Break(fault) })
	run.rec.mu.Lock()
	defer run.rec.mu.Unlock()
	if len(run.rec.reads) == 0 || len(run.rec.writes) == 0 {
		t.Fatalf("empty history: %d writes, %d reads", len(run.rec.writes), len(run.rec.reads))
	}
	violations := Check(run.rec.writes, run.rec.reads)
	return len(violations) > 0, fmt.Sprintf("%d catch-ups, %d consistent reads (%d failed), %d violations found",
		run.advances, len(run.rec.reads), run.readErrors, len(violations))
}
