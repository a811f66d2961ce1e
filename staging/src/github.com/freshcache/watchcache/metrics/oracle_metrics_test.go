package metrics

import (
	"errors"
	"testing"

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

	r.FetchDone(63, nil)
	r.FetchDone(1, nil)
	r.FetchDone(4, errors.New("etcdserver: request timed out"))

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

	// The names that design.md promises are on /metrics.
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"apiserver_freshcache_revision_fetches_total":   false,
		"apiserver_freshcache_reads_per_revision_fetch": false,
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
