package metrics

import (
	"sync"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The revision oracle's metrics (package oracle). A revision fetch serves
// every resource on one etcd cluster at once, so these two carry no group
// and resource labels.
var (
	revisionFetches = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Namespace:      namespace,
		Subsystem:      subsystem,
		Name:           "revision_fetches_total",
		Help:           "Linearizable revision fetches sent to etcd for consistent reads, by result (success|error).",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"result"})
	readsPerRevisionFetch = compbasemetrics.NewHistogram(&compbasemetrics.HistogramOpts{
		Namespace:      namespace,
		Subsystem:      subsystem,
		Name:           "reads_per_revision_fetch",
		Help:           "Consistent reads answered by one revision fetch (coalescing); 0 when every waiter gave up first.",
		Buckets:        []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
		StabilityLevel: compbasemetrics.ALPHA,
	})

	registerOracleOnce sync.Once
)

// Results of a revision fetch, the result label of revision_fetches_total.
const (
	FetchSuccess = "success"
	FetchError   = "error"
)

// OracleRecorder records the revision oracle's fetches on the legacy
// registry. It implements oracle.Recorder; pass it in oracle.Options.
type OracleRecorder struct {
	success, failure compbasemetrics.CounterMetric
}

// NewOracleRecorder registers the oracle's metrics on first use and returns
// a recorder for them.
func NewOracleRecorder() *OracleRecorder {
	registerOracleOnce.Do(func() {
		legacyregistry.MustRegister(revisionFetches, readsPerRevisionFetch)
	})
	return &OracleRecorder{
		success: revisionFetches.WithLabelValues(FetchSuccess),
		failure: revisionFetches.WithLabelValues(FetchError),
	}
}

// FetchDone records one fetch that answered reads Revision calls.
func (r *OracleRecorder) FetchDone(reads int, err error) {
	if err != nil {
		r.failure.Inc()
	} else {
		r.success.Inc()
	}
	readsPerRevisionFetch.Observe(float64(reads))
}
