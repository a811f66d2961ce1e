package linearizability

import (
	"strings"
	"testing"
	"time"
)

// history: a put of a at 5 (acknowledged at position 2), a put of b at 6
// (acknowledged at 4), a delete of a at 7 (acknowledged at 6), then a put
// of a at 9 that is still running (invoked at 10, returns at 20).
var hist = []Write{
	{Key: "a", Invoke: 1, Return: 2, RV: 5},
	{Key: "b", Invoke: 3, Return: 4, RV: 6},
	{Key: "a", Invoke: 5, Return: 6, RV: 7, Delete: true},
	{Key: "a", Invoke: 10, Return: 20, RV: 9},
}

// TestCheckReportsStaleReads: hand-made stale and inconsistent reads are
// reported, with the reason; fresh ones are not. This is what makes a
// passing end-to-end run meaningful.
func TestCheckReportsStaleReads(t *testing.T) {
	cases := []struct {
		name string
		read Read
		want string // substring of the violation; "" means fresh
	}{
		{"fresh LIST after the delete", Read{Invoke: 7, Return: 8, SnapshotRV: 7, Objects: map[string]int64{"b": 6}}, ""},
		{"fresh GET of b", Read{Key: "b", Invoke: 5, Return: 8, Objects: map[string]int64{"b": 6}}, ""},
		{"GET of a concurrent with its re-creation may see it", Read{Key: "a", Invoke: 11, Return: 12, Objects: map[string]int64{"a": 9}}, ""},
		{"GET of a concurrent with its re-creation may miss it", Read{Key: "a", Invoke: 11, Return: 12}, ""},
		{"LIST before the delete was acknowledged may show a", Read{Invoke: 5, Return: 8, SnapshotRV: 6, Objects: map[string]int64{"a": 5, "b": 6}}, ""},

		{"stale LIST: snapshot older than an acknowledged write", Read{Invoke: 7, Return: 8, SnapshotRV: 6, Objects: map[string]int64{"a": 5, "b": 6}}, "older than the write"},
		{"stale GET: deleted object returned", Read{Key: "a", Invoke: 7, Return: 8, Objects: map[string]int64{"a": 5}}, "stale: a returned at RV 5"},
		{"stale GET: acknowledged create missing", Read{Key: "b", Invoke: 5, Return: 8}, "stale: b missing"},
		{"stale WATCH start: a claimed RV that hides b", Read{Invoke: 5, Return: 8, SnapshotRV: 5, Objects: map[string]int64{"a": 5}}, "older than the write of b at 6"},
		{"torn LIST: b missing from a snapshot that includes it", Read{Invoke: 7, Return: 8, SnapshotRV: 7}, "b missing from the snapshot at RV 7"},
		{"torn LIST: deleted a present in a snapshot after the delete", Read{Invoke: 7, Return: 8, SnapshotRV: 7, Objects: map[string]int64{"a": 5, "b": 6}}, "a present (RV 5)"},
		{"phantom: a version nobody wrote", Read{Key: "b", Invoke: 5, Return: 8, Objects: map[string]int64{"b": 8}}, "which no write produced"},
		{"phantom: from the future", Read{Key: "a", Invoke: 7, Return: 8, Objects: map[string]int64{"a": 9}}, "started after the read returned"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.read.Name = "r"
			got := Check(hist, []Read{tc.read})
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("fresh read reported: %v", got)
				}
				return
			}
			for _, v := range got {
				if strings.Contains(v.Reason, tc.want) {
					t.Logf("reported: %v", v)
					return
				}
			}
			t.Fatalf("violations %v, want one containing %q", got, tc.want)
		})
	}
}

func TestNewestAckedRV(t *testing.T) {
	for _, tc := range []struct {
		invoke uint64
		want   int64
	}{{1, 0}, {3, 5}, {5, 6}, {7, 7}, {21, 9}} {
		if got := NewestAckedRV(hist, tc.invoke); got != tc.want {
			t.Errorf("NewestAckedRV(%d) = %d, want %d", tc.invoke, got, tc.want)
		}
	}
}

// An rv=0 read's Invoke moves back to the last position stamped at least
// zeroStaleness before it, so that Check excuses exactly the writes
// acknowledged within the bound.
func TestRecorderBounded(t *testing.T) {
	base := time.Now()
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	zs := int(zeroStaleness / time.Millisecond)
	rec := &recorder{pos: 5, stamps: []time.Time{ms(0), ms(1), ms(zs), ms(zs + 1), ms(2*zs + 1)}}
	cases := []struct{ invoke, want uint64 }{
		{1, 0}, // nothing was stamped before the bound
		{3, 1}, // exactly zeroStaleness after position 1
		{4, 2}, // position 2 is zeroStaleness before position 4
		{5, 4}, // positions 1-4 are at least zeroStaleness older
	}
	for _, tc := range cases {
		if got := rec.bounded(tc.invoke); got != tc.want {
			t.Errorf("bounded(%d) = %d, want %d", tc.invoke, got, tc.want)
		}
	}
}
