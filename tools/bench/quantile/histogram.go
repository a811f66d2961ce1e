package quantile

import (
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
)

// Histogram is a cumulative Prometheus histogram: upper bound -> count of
// observations at or below it. +Inf holds the total. Histograms with the
// same buckets (series of several label sets, or of several servers) add
// up bucket by bucket.
type Histogram map[float64]float64

// Add adds the buckets of series s to h and returns h, or a new Histogram
// when h is nil (as append does).
func (h Histogram) Add(s *dto.Histogram) Histogram {
	if h == nil {
		h = Histogram{}
	}
	for _, b := range s.GetBucket() {
		// The text format lists le="+Inf" as a bucket; the sample count,
		// the same total, stands for it.
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
	}
	h[math.Inf(1)] += float64(s.GetSampleCount())
	return h
}

// Plus is h and o summed bucket by bucket; nil only when both are.
func (h Histogram) Plus(o Histogram) Histogram {
	if h == nil && o == nil {
		return nil
	}
	out := Histogram{}
	for b, c := range h {
		out[b] += c
	}
	for b, c := range o {
		out[b] += c
	}
	return out
}

// Sub is h - before, bucket by bucket: the observations between two
// scrapes. A bucket missing from before counts as 0; nil when h is.
func (h Histogram) Sub(before Histogram) Histogram {
	if h == nil {
		return nil
	}
	out := make(Histogram, len(h))
	for b, c := range h {
		out[b] = c - before[b]
	}
	return out
}

// Count is the number of observations.
func (h Histogram) Count() float64 { return h[math.Inf(1)] }

// Quantile estimates the q-quantile (0 < q <= 1) as PromQL's
// histogram_quantile does: linear within the bucket the rank falls in,
// from 0 for the first bucket; a rank in the +Inf bucket answers the
// largest finite bound. ok is false with no observations.
func (h Histogram) Quantile(q float64) (v float64, ok bool) {
	total := h.Count()
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
