package metrics

import (
	"sync"
	"time"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The revision oracle's metrics (package oracle). A revision fetch serves
// every resource on one etcd cluster at once, so these carry no group and
// resource labels.
var (
	revisionFetches       = compbasemetrics.NewCounterVec(counterOpts("revision_fetches_total", "Linearizable revision fetches sent to etcd for consistent reads, by result (success|error)."), []string{"result"})
	readsPerRevisionFetch = compbasemetrics.NewHistogram(histogramOpts("reads_per_revision_fetch", "Consistent reads answered by one revision fetch (coalescing); 0 when every waiter gave up first.", []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}))
	// revisionFetchDuration is the floor under every consistent read's
	// wait: a read waits for the rest of the fetch in flight and then for a
	// whole fetch of its own. Its buckets match read_wait_seconds'.
	revisionFetchDuration = compbasemetrics.NewHistogramVec(histogramOpts("revision_fetch_duration_seconds", "Round trip of one linearizable revision fetch to etcd, by result (success|error).", readWaitBuckets), []string{"result"})
	// readsAnsweredByWrites counts the reads that took their revision from
	// a write of this apiserver instead of a fetch.
	readsAnsweredByWrites = compbasemetrics.NewCounter(counterOpts("reads_answered_by_writes_total", "Consistent reads whose revision came from a write this apiserver sent to etcd after they arrived, instead of a revision fetch."))

	// revisionHolds counts the reads held for a write of this apiserver
	// before their fetch (oracle.Options.WriteHold), by how the hold
	// ended: write is a fetch saved.
	revisionHolds = compbasemetrics.NewCounterVec(counterOpts("revision_holds_total", "Rounds of consistent reads held for this apiserver's next write before a revision fetch, by how the hold ended (write|expired|abandoned)."), []string{"result"})

	registerOracleOnce sync.Once
)

// Results of a revision fetch, the result label of revision_fetches_total.
const (
	FetchSuccess = "success"
	FetchError   = "error"
)

// How a hold for a write ended, the result label of revision_holds_total.
const (
	// HoldWrite: a write started and covered the held reads.
	HoldWrite = "write"
	// HoldExpired: no write started within the hold; a fetch went out.
	HoldExpired = "expired"
	// HoldAbandoned: every held caller gave up first.
	HoldAbandoned = "abandoned"
)

// OracleRecorder records the revision oracle's fetches on the legacy
// registry. It implements oracle.Recorder; pass it in oracle.Options.
type OracleRecorder struct {
	success, failure         compbasemetrics.CounterMetric
	tookSuccess, tookFailure compbasemetrics.ObserverMetric
}

// NewOracleRecorder registers the oracle's metrics on first use and returns
// a recorder for them.
func NewOracleRecorder() *OracleRecorder {
	registerOracleOnce.Do(func() {
		legacyregistry.MustRegister(revisionFetches, readsPerRevisionFetch, revisionFetchDuration, readsAnsweredByWrites, revisionHolds)
	})
	return &OracleRecorder{
		success:     revisionFetches.WithLabelValues(FetchSuccess),
		failure:     revisionFetches.WithLabelValues(FetchError),
		tookSuccess: revisionFetchDuration.WithLabelValues(FetchSuccess),
		tookFailure: revisionFetchDuration.WithLabelValues(FetchError),
	}
}

// FetchDone records one fetch that answered reads Revision calls and took
// took.
func (r *OracleRecorder) FetchDone(reads int, took time.Duration, err error) {
	if err != nil {
		r.failure.Inc()
		r.tookFailure.Observe(took.Seconds())
	} else {
		r.success.Inc()
		r.tookSuccess.Observe(took.Seconds())
	}
	readsPerRevisionFetch.Observe(float64(reads))
}

// WriteAnswered records reads answered by a write's revision.
func (r *OracleRecorder) WriteAnswered(reads int) {
	readsAnsweredByWrites.Add(float64(reads))
}

// HoldEnded records how a hold for a write ended (HoldWrite, HoldExpired,
// HoldAbandoned).
func (r *OracleRecorder) HoldEnded(outcome string) {
	revisionHolds.WithLabelValues(outcome).Inc()
}
