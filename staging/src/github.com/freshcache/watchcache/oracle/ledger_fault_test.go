//go:build invariants

package oracle

import "testing"

// TestLedgerBreak: each fault proves the span it must not, and NoFault
// restores the ledger.
func TestLedgerBreak(t *testing.T) {
	l := NewLedger()
	l.Ended(l.Sending(), 2, "/registry/pods/ns/p") // the resource's own write
	l.Ended(l.Sending(), 3, "/registry/leases/ns/l")
	for _, tc := range []struct {
		fault    LedgerFault
		from, to int64
		want     Proof
	}{
		{NoFault, 1, 3, Pending},          // p's event is to come
		{FaultIgnorePrefix, 1, 3, Proven}, // wrong
		{NoFault, 2, 4, Unproven},         // 4 is nobody's write here
		{FaultIgnoreGaps, 2, 4, Proven},   // wrong
		{NoFault, 2, 3, Proven},
	} {
		l.Break(tc.fault)
		if got := l.Prove("/registry/pods/", tc.from, tc.to); got != tc.want {
			t.Fatalf("fault %d: Prove(%d, %d) = %v, want %v", tc.fault, tc.from, tc.to, got, tc.want)
		}
	}
}
