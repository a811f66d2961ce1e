package metrics

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// gathered reports whether the legacy registry exposes a series of name
// for gr.
func gathered(t *testing.T, name string, gr schema.GroupResource) bool {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["group"] == gr.Group && labels["resource"] == gr.Resource {
				return true
			}
		}
	}
	return false
}

// TestConsistencyCheckedCountsInconsistencies: every round counts under
// its result, a mismatch is also an inconsistency, and the inconsistency
// series exists at 0 as soon as the resource's recorder does, so that an
// alert on its increase fires on the first one.
func TestConsistencyCheckedCountsInconsistencies(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "consistencytests"}
	r := For(gr)
	inconsistent := func() float64 {
		t.Helper()
		v, err := testutil.GetCounterMetricValue(inconsistencies.WithLabelValues(gr.Group, gr.Resource))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	checks := func(result string) float64 {
		t.Helper()
		v, err := testutil.GetCounterMetricValue(consistencyChecks.WithLabelValues(gr.Group, gr.Resource, result))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !gathered(t, "apiserver_freshcache_inconsistencies_total", gr) {
		t.Fatal("no inconsistencies_total series for the resource before its first round")
	}
	if v := inconsistent(); v != 0 {
		t.Fatalf("inconsistencies_total starts at %v, want 0", v)
	}
	for _, res := range []string{CheckMatch, CheckMatch, CheckSkipped, CheckError, CheckMismatch} {
		r.ConsistencyChecked(res)
	}
	want := map[string]float64{CheckMatch: 2, CheckSkipped: 1, CheckError: 1, CheckMismatch: 1}
	for res, n := range want {
		if got := checks(res); got != n {
			t.Errorf("consistency_checks_total{result=%s} = %v, want %v", res, got, n)
		}
	}
	if v := inconsistent(); v != 1 {
		t.Fatalf("inconsistencies_total = %v after one mismatch, want 1", v)
	}
}
