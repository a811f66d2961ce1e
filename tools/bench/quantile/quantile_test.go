package quantile

import (
	"slices"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	ten := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	for name, tc := range map[string]struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		"empty":                    {nil, 50, 0},
		"one sample":               {ms(7), 99, 7 * time.Millisecond},
		"median of odd":            {ms(1, 2, 3), 50, 2 * time.Millisecond},
		"median of even is lower":  {ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		"p50 of ten is the fifth":  {ten, 50, 5 * time.Millisecond},
		"p10 of ten is the first":  {ten, 10, time.Millisecond},
		"p11 of ten is the second": {ten, 11, 2 * time.Millisecond},
		"p99 of ten is the last":   {ten, 99, 10 * time.Millisecond},
		"p99 of 100":               {ms(hundred...), 99, 99 * time.Millisecond},
		"p100 is the max":          {ms(hundred...), 100, 100 * time.Millisecond},
		"tiny p is the min":        {ms(hundred...), 0.001, time.Millisecond},
		"p50 of 2 is lower":        {ms(1, 9), 50, time.Millisecond},
		"p51 of 2 is higher":       {ms(1, 9), 51, 9 * time.Millisecond},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(%v) = %v, want %v", name, tc.p, got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []int64
		want int64
	}{
		"none":                           {nil, 0},
		"one":                            {[]int64{5}, 5},
		"odd count, unsorted":            {[]int64{9, 1, 5}, 5},
		"even count, rounded toward 0":   {[]int64{4, 1, 3, 2}, 2}, // (2+3)/2 in integers
		"even count, exact":              {[]int64{10, 30}, 20},
		"negative, rounded toward 0 too": {[]int64{-2, -1}, -1},
	} {
		in := slices.Clone(tc.in)
		if got := Median(in); got != tc.want {
			t.Errorf("%s: Median(%v) = %d, want %d", name, tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("%s: Median reordered its argument to %v", name, in)
		}
	}
	for name, tc := range map[string]struct {
		in   []float64
		want float64
	}{
		"none":                 {nil, 0},
		"odd count":            {[]float64{3, 1.5, 2}, 2},
		"even count, the mean": {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("%s: Median(%v) = %v, want %v", name, tc.in, got, tc.want)
		}
	}
}
