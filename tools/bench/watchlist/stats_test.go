package watchlist

import (
	"testing"
	"time"
)

func TestLatencySummarySorts(t *testing.T) {
	lat := []time.Duration{5 * time.Millisecond, time.Millisecond, 3 * time.Millisecond}
	p50, p99, maxMs := latencySummary(lat)
	if p50 != 3 || p99 != 5 || maxMs != 5 {
		t.Fatalf("got p50=%v p99=%v max=%v, want 3 5 5", p50, p99, maxMs)
	}
	if a, b, c := latencySummary(nil); a != 0 || b != 0 || c != 0 {
		t.Fatalf("empty: got %v %v %v", a, b, c)
	}
}
