package freshread

import "testing"

// TestFallbackBudget: which fallback reads the budget admits, step by
// step: the first always, then only while the objects in flight stay
// within limit times the cached objects; a negative limit admits all.
func TestFallbackBudget(t *testing.T) {
	type step struct {
		take, give int64 // one of them is set
		cached     int
		wantOK     bool
		wantFlight int64
	}
	for _, tc := range []struct {
		name  string
		limit float64
		steps []step
	}{
		{"the first goes even over the budget", 1, []step{
			{take: 500, cached: 100, wantOK: true, wantFlight: 500},
			{take: 1, cached: 100, wantOK: false, wantFlight: 500},
			{give: 500, wantFlight: 0},
			{take: 1, cached: 100, wantOK: true, wantFlight: 1},
		}},
		{"reads fit up to the limit", 1, []step{
			{take: 60, cached: 100, wantOK: true, wantFlight: 60},
			{take: 40, cached: 100, wantOK: true, wantFlight: 100},
			{take: 1, cached: 100, wantOK: false, wantFlight: 100},
			{give: 40, wantFlight: 60},
			{take: 40, cached: 100, wantOK: true, wantFlight: 100},
		}},
		{"a fraction of the cache", 0.5, []step{
			{take: 30, cached: 100, wantOK: true, wantFlight: 30},
			{take: 30, cached: 100, wantOK: false, wantFlight: 30},
			{take: 20, cached: 100, wantOK: true, wantFlight: 50},
		}},
		{"unbounded", -1, []step{
			{take: 1000, cached: 1, wantOK: true, wantFlight: 1000},
			{take: 1000, cached: 1, wantOK: true, wantFlight: 2000},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &budget{limit: tc.limit}
			for i, s := range tc.steps {
				if s.give > 0 {
					if got := b.give(s.give); got != s.wantFlight {
						t.Fatalf("step %d: give(%d) leaves %d in flight, want %d", i, s.give, got, s.wantFlight)
					}
					continue
				}
				ok, flight := b.take(s.take, s.cached)
				if ok != s.wantOK || flight != s.wantFlight {
					t.Fatalf("step %d: take(%d, %d) = %v, %d; want %v, %d", i, s.take, s.cached, ok, flight, s.wantOK, s.wantFlight)
				}
			}
		})
	}
}
