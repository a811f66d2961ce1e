package metrics

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// TestReadWaitAndRelease checks that a resource's recorder feeds both wait
// histograms under its labels, each with what it was given.
func TestReadWaitAndRelease(t *testing.T) {
	r := For(schema.GroupResource{Group: "apps", Resource: "readmetricstests"})
	labels := map[string]string{"group": "apps", "resource": "readmetricstests", "verb": VerbList, "requested": RequestedConsistent}
	hist := func(name string) (uint64, float64) {
		t.Helper()
		vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, name, labels)
		if err != nil {
			return 0, 0 // nothing observed under these labels yet
		}
		return vec.GetAggregatedSampleCount(), vec.GetAggregatedSampleSum()
	}
	r.ReadWait(VerbList, RequestedConsistent, 30*time.Millisecond)
	r.ReadReleased(VerbList, RequestedConsistent, 12*time.Millisecond)
	r.ReadWait(VerbList, RequestedConsistent, 3*time.Millisecond) // e.g. timed out: no release
	if n, s := hist("apiserver_freshcache_read_wait_seconds"); n != 2 || !near(s, 0.033) {
		t.Errorf("read_wait_seconds: %d observations summing to %v, want 2 and 0.033", n, s)
	}
	if n, s := hist("apiserver_freshcache_read_release_seconds"); n != 1 || !near(s, 0.012) {
		t.Errorf("read_release_seconds: %d observations summing to %v, want 1 and 0.012", n, s)
	}
}

// TestReadWaitExtended checks that an extension is counted under the
// resource's and the read's labels, and only there.
func TestReadWaitExtended(t *testing.T) {
	r := For(schema.GroupResource{Resource: "extensiontests"})
	r.ReadWaitExtended(VerbList, RequestedZero)
	r.ReadWaitExtended(VerbList, RequestedZero)
	got := func(requested string) float64 {
		t.Helper()
		v, err := testutil.GetCounterMetricValue(readWaitExtensions.WithLabelValues("", "extensiontests", VerbList, requested))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if n := got(RequestedZero); n != 2 {
		t.Errorf("read_wait_extensions_total{requested=zero} = %v, want 2", n)
	}
	if n := got(RequestedConsistent); n != 0 {
		t.Errorf("read_wait_extensions_total{requested=consistent} = %v, want 0", n)
	}
}
