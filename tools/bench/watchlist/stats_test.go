package watchlist

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for name, tc := range map[string]struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		"empty":              {nil, 50, 0},
		"one sample":         {ms(7), 99, 7 * time.Millisecond},
		"median of odd":      {ms(1, 2, 3), 50, 2 * time.Millisecond},
		"median of even":     {ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		"p99 of 100":         {ms(hundred...), 99, 99 * time.Millisecond},
		"p100 is the max":    {ms(hundred...), 100, 100 * time.Millisecond},
		"tiny p is the min":  {ms(hundred...), 0.001, time.Millisecond},
		"p99 of 10 is max":   {ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		"p50 of 2 is lower":  {ms(1, 9), 50, time.Millisecond},
		"p51 of 2 is higher": {ms(1, 9), 51, 9 * time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", name, tc.p, got, tc.want)
		}
	}
}

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

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	for name, tc := range map[string]struct {
		h      histogram
		q      float64
		want   float64
		wantOK bool
	}{
		"empty":                   {histogram{0.1: 0, inf: 0}, 0.5, 0, false},
		"nil":                     {nil, 0.5, 0, false},
		"first bucket from zero":  {histogram{0.1: 10, 1: 10, inf: 10}, 0.5, 0.05, true},
		"interpolated in second":  {histogram{0.1: 0, 1: 10, inf: 10}, 0.5, 0.55, true},
		"rank in +Inf bucket":     {histogram{0.1: 5, 1: 5, inf: 10}, 0.99, 1, true},
		"exact bucket edge":       {histogram{0.1: 5, 1: 10, inf: 10}, 0.5, 0.1, true},
		"p99 of mostly-fast set":  {histogram{0.001: 98, 0.01: 99, 0.1: 100, inf: 100}, 0.99, 0.01, true},
		"empty buckets are skips": {histogram{0.001: 0, 0.01: 0, 0.1: 4, inf: 4}, 0.5, 0.055, true},
	} {
		got, ok := tc.h.quantile(tc.q)
		if ok != tc.wantOK || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: quantile(%v) = %v, %v; want %v, %v", name, tc.q, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestHistogramSub(t *testing.T) {
	inf := math.Inf(1)
	before := histogram{0.1: 3, inf: 4}
	after := histogram{0.1: 5, 1: 2, inf: 9}
	got := after.sub(before)
	if got[0.1] != 2 || got[1] != 2 || got[inf] != 5 || got.count() != 5 {
		t.Fatalf("sub = %v", got)
	}
	if histogram(nil).sub(before) != nil {
		t.Fatal("nil - x should be nil (the metric is absent)")
	}
}
