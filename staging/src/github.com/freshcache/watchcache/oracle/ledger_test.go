package oracle

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLedgerProve(t *testing.T) {
	const pods = "/registry/pods/"
	// A write is sent and ended in its turn; a write with no key and no
	// revision is sent and left in flight, so etcd will commit it above
	// every revision ended before its turn.
	type write struct {
		rev int64
		key string
	}
	inFlight := write{}
	for _, tc := range []struct {
		name     string
		writes   []write
		from, to int64
		want     Proof
	}{
		{name: "empty span", from: 7, to: 7, want: Proven},
		{name: "nothing recorded", from: 1, to: 2, want: Unproven},
		{name: "writes of another resource", writes: []write{{2, "/registry/leases/a"}, {3, "/registry/events/b"}}, from: 1, to: 3, want: Proven},
		{name: "a prefix that only starts the same", writes: []write{{2, "/registry/podsecurity/a"}}, from: 1, to: 2, want: Proven},
		{name: "a gap", writes: []write{{2, "/registry/leases/a"}, {4, "/registry/leases/b"}}, from: 1, to: 4, want: Unproven},
		{name: "a gap a write in flight may fill", writes: []write{{2, "/registry/leases/a"}, inFlight, {4, "/registry/leases/b"}}, from: 1, to: 4, want: Pending},
		{name: "a gap below every write in flight", writes: []write{{2, "/registry/leases/a"}, {4, "/registry/leases/b"}, inFlight}, from: 1, to: 4, want: Unproven},
		{name: "more gaps than writes in flight", writes: []write{{3, "/registry/leases/a"}, inFlight}, from: 1, to: 4, want: Unproven},
		{name: "each gap above a write in flight of its own", writes: []write{{1, "/registry/leases/a"}, inFlight, {2, "/registry/leases/b"}, {4, "/registry/leases/c"}, {5, "/registry/leases/d"}, inFlight}, from: 0, to: 6, want: Pending},
		{name: "two gaps above only one write in flight", writes: []write{{1, "/registry/leases/a"}, inFlight, {4, "/registry/leases/c"}, {5, "/registry/leases/d"}, inFlight}, from: 0, to: 5, want: Unproven},
		{name: "a write in flight before anything was recorded", writes: []write{inFlight, {2, "/registry/leases/a"}}, from: 0, to: 2, want: Pending},
		{name: "the prefix's own write, not yet applied", writes: []write{{2, pods + "ns/p"}, {3, "/registry/leases/a"}}, from: 1, to: 3, want: Pending},
		{name: "the prefix's own write, applied", writes: []write{{2, pods + "ns/p"}, {3, "/registry/leases/a"}}, from: 2, to: 3, want: Proven},
		{name: "span longer than the ledger", writes: []write{{2, "/registry/leases/a"}}, from: 1, to: 2 + LedgerSpan, want: Unproven},
		{name: "overwritten by a revision LedgerSpan later", writes: []write{{2, "/registry/leases/a"}, {2 + LedgerSpan, "/registry/leases/b"}}, from: 1, to: 2, want: Unproven},
		{name: "an older revision does not overwrite a newer one", writes: []write{{2 + LedgerSpan, "/registry/leases/b"}, {2, "/registry/leases/a"}}, from: 1 + LedgerSpan, to: 2 + LedgerSpan, want: Proven},
		{name: "no revision", writes: []write{{0, "/registry/leases/a"}}, from: 0, to: 1, want: Unproven},
		{name: "no key", writes: []write{{1, ""}}, from: 0, to: 1, want: Unproven},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			for _, w := range tc.writes {
				s := l.Sending()
				if w != inFlight {
					l.Ended(s, w.rev, w.key)
				}
			}
			if got := l.Prove(pods, tc.from, tc.to); got != tc.want {
				t.Fatalf("Prove(%d, %d) = %d, want %d", tc.from, tc.to, got, tc.want)
			}
		})
	}
}

func TestLedgerNil(t *testing.T) {
	var l *Ledger
	l.Ended(l.Sending(), 3, "/registry/leases/a")
	if l.Changed() != nil {
		t.Fatal("a nil ledger's Changed is not nil")
	}
	if got := l.Prove("/registry/pods/", 1, 2); got != Unproven {
		t.Fatalf("a nil ledger proves %d", got)
	}
}

func TestLedgerChanged(t *testing.T) {
	l := NewLedger()
	ch := l.Changed()
	if ch != l.Changed() {
		t.Fatal("two Changed calls without a write in between differ")
	}
	sent := l.Sending()
	select {
	case <-ch:
		t.Fatal("Changed closed by Sending")
	default:
	}
	l.Ended(sent, 0, "")
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed when the write ended")
	}
	if l.Changed() == ch {
		t.Fatal("Changed not replaced after it closed")
	}
}

// TestLedgerModel checks Prove against a plain model: a map of every
// revision written and by whom, over random histories in which this
// process writes some revisions and others write the rest.
func TestLedgerModel(t *testing.T) {
	prefixes := []string{"/registry/pods/", "/registry/leases/", "/registry/events/"}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := NewLedger()
		// owner[rev] is the key of this process's write at rev, "" for
		// somebody else's.
		owner := map[int64]string{}
		var rev int64
		n := 50 + rng.IntN(3*LedgerSpan)
		for range n {
			rev++
			if rng.IntN(10) == 0 {
				continue // somebody else's write
			}
			key := prefixes[rng.IntN(len(prefixes))] + fmt.Sprint(rev)
			owner[rev] = key
			l.Ended(l.Sending(), rev, key)
		}
		for range 50 {
			prefix := prefixes[rng.IntN(len(prefixes))]
			to := 1 + rng.Int64N(rev)
			from := max(0, to-1-rng.Int64N(40))
			want := Proven
			for r := from + 1; r <= to; r++ {
				key, ok := owner[r]
				switch {
				case !ok || overwritten(owner, r, rev):
					want = Unproven
				case strings.HasPrefix(key, prefix) && want == Proven:
					want = Pending
				}
			}
			if got := l.Prove(prefix, from, to); got != want {
				t.Fatalf("seed %d: Prove(%q, %d, %d) = %d, want %d (newest revision %d)", seed, prefix, from, to, got, want, rev)
			}
		}
	}
}

// overwritten reports whether a write of this process at a revision up to
// newest took the ledger's slot of r (the same remainder, later).
func overwritten(owner map[int64]string, r, newest int64) bool {
	for later := r + LedgerSpan; later <= newest; later += LedgerSpan {
		if _, ok := owner[later]; ok {
			return true
		}
	}
	return false
}
