package bench

import (
	"runtime"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/freshcache/freshcache/tools/bench/promtext"
	"github.com/freshcache/freshcache/tools/bench/quantile"
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
	wait    quantile.Histogram // nil when the backend's metric is not registered
	release quantile.Histogram // freshcache's wait until release; nil as wait
	fetch   quantile.Histogram // revision-fetch round trips; nil as wait
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
				if promtext.Label(m, "grpc_service") != "etcdserverpb.KV" {
					continue
				}
				switch promtext.Label(m, "grpc_method") {
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
				if promtext.Label(m, "grpc_service") == "etcdserverpb.Watch" && promtext.Label(m, "grpc_method") == "Watch" {
					c.WatchMsgs += m.GetCounter().GetValue()
				}
			}
		}
	}
	return c
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

// histogramFrom sums the series of histogram name for resource (every
// series when resource is ""; series without a resource label always
// count); nil when the family is absent.
func histogramFrom(mfs []*dto.MetricFamily, name, resource string) quantile.Histogram {
	return histogramWhere(mfs, name, func(m *dto.Metric) bool {
		r := promtext.Label(m, "resource")
		return resource == "" || r == "" || r == resource
	})
}

// histogramWhere sums the series of histogram name that keep accepts; nil
// when the family is absent.
func histogramWhere(mfs []*dto.MetricFamily, name string, keep func(*dto.Metric) bool) quantile.Histogram {
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
