package watchlist

import (
	"math"
	"slices"
	"time"
)

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted:
// the smallest sample with at least p% of the samples at or below it. It
// is 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencySummary sorts lat in place and returns its p50, p99 and max in
// milliseconds.
func latencySummary(lat []time.Duration) (p50, p99, maxMs float64) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	return ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(lat[len(lat)-1])
}

// histogram is a cumulative Prometheus histogram: upper bound -> count of
// observations at or below it. +Inf holds the total.
type histogram map[float64]float64

// sub is h - before, bucket by bucket: the observations between two
// scrapes. A bucket missing from before counts as 0.
func (h histogram) sub(before histogram) histogram {
	if h == nil {
		return nil
	}
	out := make(histogram, len(h))
	for b, c := range h {
		out[b] = c - before[b]
	}
	return out
}

// count is the number of observations.
func (h histogram) count() float64 { return h[math.Inf(1)] }

// quantile estimates the q-quantile (0 < q <= 1) as Prometheus's
// histogram_quantile does: linear within the bucket the rank falls in,
// from 0 for the first bucket; a rank in the +Inf bucket answers the
// largest finite bound. ok is false with no observations.
func (h histogram) quantile(q float64) (v float64, ok bool) {
	total := h.count()
	if total <= 0 {
		return 0, false
	}
	bounds := make([]float64, 0, len(h))
	for b := range h {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range bounds {
		c := h[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return prevBound, true
			}
			if c == prevCount {
				return b, true
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount), true
		}
		prevBound, prevCount = b, c
	}
	return prevBound, true
}
