package bench

import (
	"math"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Freshness-wait histograms, by backend. upstream's cacher records its own
// wait for consistent LISTs; freshcache records apiserver_freshcache_*
// once its freshness protocol is in. etcd never waits.
var waitMetric = map[string]string{
	BackendUpstream:   "apiserver_watch_cache_read_wait_seconds",
	BackendFreshcache: "apiserver_freshcache_read_wait_seconds",
}

// releaseMetric is the part of freshcache's wait until the freshness
// protocol released the read; the rest of the wait is the reader's queue
// for a CPU.
var releaseMetric = map[string]string{
	BackendFreshcache: "apiserver_freshcache_read_release_seconds",
}

// fetchMetric is freshcache's revision-fetch round trip: the floor under
// its consistent reads' wait. Only freshcache fetches revisions.
var fetchMetric = map[string]string{
	BackendFreshcache: "apiserver_freshcache_revision_fetch_duration_seconds",
}

// progressMetric counts the progress requests freshcache sends on its
// watch streams.
var progressMetric = map[string]string{
	BackendFreshcache: "apiserver_freshcache_progress_requests_total",
}

// sample is the process state the harness diffs around a row.
type sample struct {
	at      time.Time
	cpu     time.Duration // user + system CPU of the whole process
	mallocs uint64
	numGC   uint32
	etcd    EtcdCounters
	wait    histogram // nil when the backend's metric is not registered
	release histogram // freshcache's wait until release; nil as wait
	fetch   histogram // revision-fetch round trips; nil as wait
	// progress counts freshcache's progress requests (all resources).
	progress float64
}

func takeSample(backend string) sample {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// One gather of the legacy registry for the cache metrics; nil on
	// error, which reads as "not registered".
	mfs, _ := legacyregistry.DefaultGatherer.Gather()
	return sample{
		at:       time.Now(),
		cpu:      time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		mallocs:  ms.Mallocs,
		numGC:    ms.NumGC,
		etcd:     readEtcdCounters(),
		wait:     histogramFrom(mfs, waitMetric[backend], "pods"),
		release:  histogramFrom(mfs, releaseMetric[backend], "pods"),
		fetch:    histogramFrom(mfs, fetchMetric[backend], ""),
		progress: counterFrom(mfs, progressMetric[backend]),
	}
}

// EtcdCounters are the embedded etcd server's gRPC counters
// (go-grpc-middleware's grpc_server_* on the Prometheus default registry,
// which the embedded server shares with this process).
type EtcdCounters struct {
	// Ranges counts Range RPCs: GET and LIST, and the linearizable
	// revision requests of consistent reads (a Range with count only).
	Ranges float64 `json:"ranges"`
	// RangeStreams counts RangeStream RPCs (etcd 3.7's streamed range,
	// which the etcd3 store uses for LISTs).
	RangeStreams float64 `json:"range_streams"`
	// Txns counts Txn RPCs (registry writes; the harness writes with Put).
	Txns float64 `json:"txns"`
	// WatchMsgs counts messages clients sent on Watch streams: watch
	// creations, cancellations and progress requests.
	WatchMsgs float64 `json:"watch_msgs"`
	// Puts counts Put RPCs: the harness's own writes, left out of Reads.
	Puts float64 `json:"puts"`
}

// Requests is every etcd request the backend caused: Ranges +
// RangeStreams + Txns + WatchMsgs. The harness's Puts are excluded.
func (c EtcdCounters) Requests() float64 { return c.Ranges + c.RangeStreams + c.Txns + c.WatchMsgs }

func (c EtcdCounters) sub(o EtcdCounters) EtcdCounters {
	return EtcdCounters{Ranges: c.Ranges - o.Ranges, RangeStreams: c.RangeStreams - o.RangeStreams, Txns: c.Txns - o.Txns, WatchMsgs: c.WatchMsgs - o.WatchMsgs, Puts: c.Puts - o.Puts}
}

func readEtcdCounters() EtcdCounters {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return EtcdCounters{}
	}
	return etcdCountersFrom(mfs)
}

func etcdCountersFrom(mfs []*dto.MetricFamily) EtcdCounters {
	var c EtcdCounters
	for _, mf := range mfs {
		switch mf.GetName() {
		case "grpc_server_started_total":
			for _, m := range mf.GetMetric() {
				if label(m, "grpc_service") != "etcdserverpb.KV" {
					continue
				}
				switch label(m, "grpc_method") {
				case "Range":
					c.Ranges += m.GetCounter().GetValue()
				case "RangeStream":
					c.RangeStreams += m.GetCounter().GetValue()
				case "Txn":
					c.Txns += m.GetCounter().GetValue()
				case "Put":
					c.Puts += m.GetCounter().GetValue()
				}
			}
		case "grpc_server_msg_received_total":
			for _, m := range mf.GetMetric() {
				if label(m, "grpc_service") == "etcdserverpb.Watch" && label(m, "grpc_method") == "Watch" {
					c.WatchMsgs += m.GetCounter().GetValue()
				}
			}
		}
	}
	return c
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// eachSeries calls f for every series of the family called name.
func eachSeries(mfs []*dto.MetricFamily, name string, f func(*dto.Metric)) {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			f(m)
		}
	}
}

// counterFrom sums every series of counter name; zero when absent.
func counterFrom(mfs []*dto.MetricFamily, name string) float64 {
	var sum float64
	eachSeries(mfs, name, func(m *dto.Metric) { sum += m.GetCounter().GetValue() })
	return sum
}

// histogram is cumulative bucket counts by upper bound, summed over the
// series of one resource.
type histogram map[float64]float64

// histogramFrom sums the series of histogram name for resource (every
// series when resource is ""; series without a resource label always
// count); nil when the family is absent.
func histogramFrom(mfs []*dto.MetricFamily, name, resource string) histogram {
	return histogramWhere(mfs, name, func(m *dto.Metric) bool {
		r := label(m, "resource")
		return resource == "" || r == "" || r == resource
	})
}

// histogramWhere sums the series of histogram name that keep accepts; nil
// when the family is absent.
func histogramWhere(mfs []*dto.MetricFamily, name string, keep func(*dto.Metric) bool) histogram {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		h := histogram{}
		for _, m := range mf.GetMetric() {
			if keep(m) {
				h.addSeries(m.GetHistogram())
			}
		}
		return h
	}
	return nil
}

func (h histogram) addSeries(hist *dto.Histogram) {
	for _, b := range hist.GetBucket() {
		// The text format lists le="+Inf" as a bucket; the sample count
		// below stands for it.
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
	}
	h[math.Inf(1)] += float64(hist.GetSampleCount())
}

// plus is h and o summed bucket by bucket (two servers' histograms with the
// same buckets); nil only when both are.
func (h histogram) plus(o histogram) histogram {
	if h == nil && o == nil {
		return nil
	}
	out := histogram{}
	for b, c := range h {
		out[b] += c
	}
	for b, c := range o {
		out[b] += c
	}
	return out
}

// quantileDelta estimates quantile q of the observations made between
// before and after, interpolating linearly inside a bucket as PromQL's
// histogram_quantile does. ok is false when nothing was observed.
func quantileDelta(before, after histogram, q float64) (float64, bool) {
	if after == nil {
		return 0, false
	}
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0, false
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range bounds {
		c := after[b] - before[b]
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

// percentile returns the p-th percentile (0..100) of sorted durations, by
// the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	k = max(0, min(k, len(sorted)-1))
	return sorted[k]
}

func posInf() float64 { return math.Inf(1) }
