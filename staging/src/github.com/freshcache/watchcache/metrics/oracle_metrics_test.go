package metrics

import (
	"errors"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestOracleRecorder(t *testing.T) {
	r := NewOracleRecorder()
	_ = NewOracleRecorder() // registering twice must not panic

	before := func(result string) float64 {
		v, _ := testutil.GetCounterMetricValue(revisionFetches.WithLabelValues(result))
		return v
	}
	okBefore, errBefore := before(FetchSuccess), before(FetchError)
	hist := func() (uint64, float64) {
		t.Helper()
		vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "apiserver_freshcache_reads_per_revision_fetch", nil)
		if err != nil {
			t.Fatal(err)
		}
		return vec.GetAggregatedSampleCount(), vec.GetAggregatedSampleSum()
	}
	countBefore, sumBefore := hist()
	took := func(result string) (uint64, float64) {
		t.Helper()
		vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "apiserver_freshcache_revision_fetch_duration_seconds", map[string]string{"result": result})
		if err != nil {
			// Not gathered yet: no observation with this label so far.
			return 0, 0
		}
		return vec.GetAggregatedSampleCount(), vec.GetAggregatedSampleSum()
	}
	okTookN, okTookSum := took(FetchSuccess)
	errTookN, errTookSum := took(FetchError)

	writesBefore, _ := testutil.GetCounterMetricValue(readsAnsweredByWrites)
	r.WriteAnswered(3)
	r.WriteAnswered(2)
	if v, _ := testutil.GetCounterMetricValue(readsAnsweredByWrites); v-writesBefore != 5 {
		t.Errorf("reads answered by writes +%v, want +5", v-writesBefore)
	}

	holdsBefore, _ := testutil.GetCounterMetricValue(revisionHolds.WithLabelValues(HoldWrite))
	expiredBefore, _ := testutil.GetCounterMetricValue(revisionHolds.WithLabelValues(HoldExpired))
	r.HoldEnded(HoldWrite)
	r.HoldEnded(HoldWrite)
	r.HoldEnded(HoldExpired)
	if v, _ := testutil.GetCounterMetricValue(revisionHolds.WithLabelValues(HoldWrite)); v-holdsBefore != 2 {
		t.Errorf("holds ended by a write +%v, want +2", v-holdsBefore)
	}
	if v, _ := testutil.GetCounterMetricValue(revisionHolds.WithLabelValues(HoldExpired)); v-expiredBefore != 1 {
		t.Errorf("expired holds +%v, want +1", v-expiredBefore)
	}

	r.FetchDone(63, 2*time.Millisecond, nil)
	r.FetchDone(1, 500*time.Microsecond, nil)
	r.FetchDone(4, 5*time.Second, errors.New("etcdserver: request timed out"))

	if got := before(FetchSuccess) - okBefore; got != 2 {
		t.Errorf("success fetches +%v, want +2", got)
	}
	if got := before(FetchError) - errBefore; got != 1 {
		t.Errorf("failed fetches +%v, want +1", got)
	}
	count, sum := hist()
	if count-countBefore != 3 || sum-sumBefore != 68 {
		t.Errorf("reads per fetch: count +%d sum +%v, want +3 and +68", count-countBefore, sum-sumBefore)
	}
	if n, s := took(FetchSuccess); n-okTookN != 2 || !near(s-okTookSum, 0.0025) {
		t.Errorf("successful fetch durations: count +%d sum +%v, want +2 and +0.0025", n-okTookN, s-okTookSum)
	}
	if n, s := took(FetchError); n-errTookN != 1 || !near(s-errTookSum, 5) {
		t.Errorf("failed fetch durations: count +%d sum +%v, want +1 and +5", n-errTookN, s-errTookSum)
	}

	// The names that docs/design.md, "Metrics", promises are on /metrics.
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"apiserver_freshcache_revision_fetches_total":          false,
		"apiserver_freshcache_reads_per_revision_fetch":        false,
		"apiserver_freshcache_revision_fetch_duration_seconds": false,
		"apiserver_freshcache_reads_answered_by_writes_total":  false,
		"apiserver_freshcache_revision_holds_total":            false,
	}
	for _, f := range families {
		if _, ok := want[f.GetName()]; ok {
			want[f.GetName()] = true
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("%s not gathered", name)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
