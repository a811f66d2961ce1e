package metrics

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/testutil"
)

// TestRevisionCompletedCountsByWhatProvedIt: each completion counts under
// its own label, for its own resource only, and the series are exposed.
func TestRevisionCompletedCountsByWhatProvedIt(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "completedtests"}
	other := schema.GroupResource{Resource: "completedothers"}
	r, o := For(gr), For(other)
	for by, n := range map[string]int{CompletedByEvent: 3, CompletedByProgress: 1, CompletedByOwnWrite: 2} {
		for i := 0; i < n; i++ {
			r.RevisionCompleted(by)
		}
	}
	o.RevisionCompleted(CompletedByProgress)
	for _, tc := range []struct {
		gr   schema.GroupResource
		by   string
		want float64
	}{
		{gr, CompletedByEvent, 3},
		{gr, CompletedByProgress, 1},
		{gr, CompletedByOwnWrite, 2},
		{other, CompletedByProgress, 1},
		{other, CompletedByOwnWrite, 0},
	} {
		got, err := testutil.GetCounterMetricValue(revisionsCompleted.WithLabelValues(tc.gr.Group, tc.gr.Resource, tc.by))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s by=%s: %v, want %v", tc.gr, tc.by, got, tc.want)
		}
	}
	if !gathered(t, "apiserver_freshcache_revisions_completed_total", gr) {
		t.Fatal("revisions_completed_total is not exposed")
	}
}
