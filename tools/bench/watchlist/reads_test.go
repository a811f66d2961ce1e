package watchlist

import (
	"testing"
	"time"
)

func TestReadStatsCountCutReadsAsLowerBounds(t *testing.T) {
	lat := make([]time.Duration, 0, 100)
	for range 98 {
		lat = append(lat, time.Millisecond)
	}
	// Two reads still waiting when the phase ended, after 4 s and 5 s.
	lat = append(lat, 4*time.Second, 5*time.Second)
	tallies := map[string]*readTally{}
	for _, k := range AllReads {
		tallies[k] = &readTally{}
	}
	tallies[ReadGetSecret] = &readTally{lat: lat, ops: 98, cut: 2, errs: 1, firstErr: "boom"}
	got := readStats(tallies, 2)
	if len(got) != len(AllReads) || got[0].Kind != ReadGetSecret {
		t.Fatalf("stats %+v", got)
	}
	s := got[0]
	if s.Ops != 98 || s.Cut != 2 || s.OpsPerSec != 49 || s.Errors != 1 || s.FirstError != "boom" {
		t.Fatalf("counts %+v", s)
	}
	// The cut reads are the tail: p99 is the first of them, max the second.
	if s.P50Ms != 1 || s.P99Ms != 4000 || s.MaxMs != 5000 {
		t.Fatalf("latencies %+v", s)
	}
	if e := got[1]; e.Ops != 0 || e.P99Ms != 0 || e.OpsPerSec != 0 {
		t.Fatalf("a kind without reads: %+v", e)
	}
}
