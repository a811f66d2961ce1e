package quantile

import (
	"maps"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

var inf = math.Inf(1)

func TestHistogramQuantile(t *testing.T) {
	for name, tc := range map[string]struct {
		h      Histogram
		q      float64
		want   float64
		wantOK bool
	}{
		"empty":                   {Histogram{0.1: 0, inf: 0}, 0.5, 0, false},
		"nil":                     {nil, 0.5, 0, false},
		"first bucket from zero":  {Histogram{0.1: 10, 1: 10, inf: 10}, 0.5, 0.05, true},
		"interpolated in second":  {Histogram{0.1: 0, 1: 10, inf: 10}, 0.5, 0.55, true},
		"rank in +Inf bucket":     {Histogram{0.1: 5, 1: 5, inf: 10}, 0.99, 1, true},
		"exact bucket edge":       {Histogram{0.1: 5, 1: 10, inf: 10}, 0.5, 0.1, true},
		"p99 of mostly-fast set":  {Histogram{0.001: 98, 0.01: 99, 0.1: 100, inf: 100}, 0.99, 0.01, true},
		"empty buckets are skips": {Histogram{0.001: 0, 0.01: 0, 0.1: 4, inf: 4}, 0.5, 0.055, true},
	} {
		got, ok := tc.h.Quantile(tc.q)
		if ok != tc.wantOK || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: Quantile(%v) = %v, %v; want %v, %v", name, tc.q, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestQuantileBetweenScrapes: the quantile of what was observed between
// two scrapes.
func TestQuantileBetweenScrapes(t *testing.T) {
	before := Histogram{0.01: 10, 0.1: 10, 1: 10, inf: 10}
	after := Histogram{0.01: 10, 0.1: 110, 1: 110, inf: 110}
	for name, tc := range map[string]struct {
		before, after Histogram
		q             float64
		wantOK        bool
		lo, hi        float64 // the answer is in (lo, hi]
	}{
		// All 100 new observations fall in (0.01, 0.1].
		"new observations":    {before, after, 0.5, true, 0.01, 0.1},
		"none new":            {after, after, 0.99, false, 0, 0},
		"metric absent":       {nil, nil, 0.99, false, 0, 0},
		"absent before":       {nil, after, 0.5, true, 0.01, 0.1},
		"metric gone after":   {before, nil, 0.5, false, 0, 0},
		"from the first ever": {Histogram{}, Histogram{0.5: 2, inf: 2}, 0.5, true, 0, 0.5},
	} {
		got, ok := tc.after.Sub(tc.before).Quantile(tc.q)
		if ok != tc.wantOK || (ok && (got <= tc.lo || got > tc.hi)) {
			t.Errorf("%s: %v, %v; want %v inside (%v, %v]", name, got, ok, tc.wantOK, tc.lo, tc.hi)
		}
	}
}

func TestHistogramSub(t *testing.T) {
	before := Histogram{0.1: 3, inf: 4}
	after := Histogram{0.1: 5, 1: 2, inf: 9}
	got := after.Sub(before)
	if !maps.Equal(got, Histogram{0.1: 2, 1: 2, inf: 5}) || got.Count() != 5 {
		t.Fatalf("Sub = %v", got)
	}
	if !maps.Equal(after, Histogram{0.1: 5, 1: 2, inf: 9}) {
		t.Fatalf("Sub changed its receiver to %v", after)
	}
	if Histogram(nil).Sub(before) != nil {
		t.Fatal("nil - x should be nil (the metric is absent)")
	}
}

func TestHistogramPlus(t *testing.T) {
	a := Histogram{0.1: 1, inf: 2}
	for name, tc := range map[string]struct {
		h, o, want Histogram
	}{
		"both":       {a, Histogram{0.1: 3, 1: 4, inf: 5}, Histogram{0.1: 4, 1: 4, inf: 7}},
		"one is nil": {nil, a, a},
		"other nil":  {a, nil, a},
		"both nil":   {nil, nil, nil},
	} {
		got := tc.h.Plus(tc.o)
		if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: %v + %v = %v, want %v", name, tc.h, tc.o, got, tc.want)
		}
	}
	if !maps.Equal(a, Histogram{0.1: 1, inf: 2}) {
		t.Errorf("Plus changed its receiver to %v", a)
	}
}

func TestHistogramAdd(t *testing.T) {
	series := func(count uint64, buckets map[float64]uint64) *dto.Histogram {
		h := &dto.Histogram{SampleCount: &count}
		for le, c := range buckets {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &le, CumulativeCount: &c})
		}
		return h
	}
	for name, tc := range map[string]struct {
		into Histogram
		add  []*dto.Histogram
		want Histogram
	}{
		"into nil": {nil, []*dto.Histogram{series(3, map[float64]uint64{0.1: 1, 1: 3})},
			Histogram{0.1: 1, 1: 3, inf: 3}},
		"two series sum": {nil, []*dto.Histogram{
			series(3, map[float64]uint64{0.1: 1, 1: 3}),
			series(5, map[float64]uint64{0.1: 4, 1: 4}),
		}, Histogram{0.1: 5, 1: 7, inf: 8}},
		// The text format lists le="+Inf"; the sample count stands for it.
		"listed +Inf counts once": {nil, []*dto.Histogram{series(3, map[float64]uint64{0.1: 1, inf: 3})},
			Histogram{0.1: 1, inf: 3}},
		"into existing": {Histogram{0.1: 1, inf: 1}, []*dto.Histogram{series(2, map[float64]uint64{0.1: 2})},
			Histogram{0.1: 3, inf: 3}},
		"empty series": {nil, []*dto.Histogram{{}}, Histogram{inf: 0}},
	} {
		h := tc.into
		for _, s := range tc.add {
			h = h.Add(s)
		}
		if !maps.Equal(h, tc.want) {
			t.Errorf("%s: %v, want %v", name, h, tc.want)
		}
	}
}
