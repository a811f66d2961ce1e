package storage

import (
	"runtime"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// The freshness metrics of each backend besides its wait
// (servermetrics.WaitMetric): only freshcache has them.
var (
	releaseMetric  = map[string]string{BackendFreshcache: servermetrics.FreshcacheRelease}
	fetchMetric    = map[string]string{BackendFreshcache: servermetrics.FreshcacheFetch}
	progressMetric = map[string]string{BackendFreshcache: servermetrics.FreshcacheProgress}
)

// sample is the process state the harness diffs around a row.
type sample struct {
	at      time.Time
	cpu     time.Duration // user + system CPU of the whole process
	mallocs uint64
	numGC   uint32
	etcd    servermetrics.EtcdCounters
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
		wait:     servermetrics.HistogramFrom(mfs, servermetrics.WaitMetric(backend), "pods"),
		release:  servermetrics.HistogramFrom(mfs, releaseMetric[backend], "pods"),
		fetch:    servermetrics.HistogramFrom(mfs, fetchMetric[backend], ""),
		progress: servermetrics.CounterFrom(mfs, progressMetric[backend]),
	}
}

// readEtcdCounters reads the embedded etcd server's counters, which it
// registers on the Prometheus default registry of this process.
func readEtcdCounters() servermetrics.EtcdCounters {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return servermetrics.EtcdCounters{}
	}
	return servermetrics.EtcdCountersFrom(mfs)
}
