package servermetrics

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/freshcache/freshcache/tools/bench/promtext"
	"github.com/freshcache/freshcache/tools/bench/quantile"
)

// EachSeries calls f for every series of the family called name.
func EachSeries(mfs []*dto.MetricFamily, name string, f func(*dto.Metric)) {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			f(m)
		}
	}
}

// CounterFrom sums every series of counter name; zero when absent.
func CounterFrom(mfs []*dto.MetricFamily, name string) float64 {
	var sum float64
	EachSeries(mfs, name, func(m *dto.Metric) { sum += m.GetCounter().GetValue() })
	return sum
}

// HistogramFrom sums the series of histogram name for resource (every
// series when resource is ""; series without a resource label always
// count); nil when the family is absent.
func HistogramFrom(mfs []*dto.MetricFamily, name, resource string) quantile.Histogram {
	return HistogramWhere(mfs, name, func(m *dto.Metric) bool {
		r := promtext.Label(m, "resource")
		return resource == "" || r == "" || r == resource
	})
}

// HistogramWhere sums the series of histogram name that keep accepts; nil
// when the family is absent.
func HistogramWhere(mfs []*dto.MetricFamily, name string, keep func(*dto.Metric) bool) quantile.Histogram {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		h := quantile.Histogram{}
		for _, m := range mf.GetMetric() {
			if keep(m) {
				h = h.Add(m.GetHistogram())
			}
		}
		return h
	}
	return nil
}
