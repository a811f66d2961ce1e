package localup

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKwokNodesReady: a node counts once it is Ready and its Lease was
// renewed at or after the start (to the second); the answer says what is
// missing.
func TestKwokNodesReady(t *testing.T) {
	started := time.Date(2026, 12, 3, 10, 0, 0, 500_000_000, time.UTC)
	node := func(name string, ready corev1.ConditionStatus) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	lease := func(name string, at time.Time) coordinationv1.Lease {
		mt := metav1.NewMicroTime(at)
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{RenewTime: &mt}}
	}
	want := map[string]bool{"kwok-0": true, "kwok-1": true}
	for _, tc := range []struct {
		name   string
		nodes  []corev1.Node
		leases []coordinationv1.Lease
		ok     bool
		why    string
	}{
		{"both", []corev1.Node{node("kwok-0", "True"), node("kwok-1", "True"), node("other", "False")},
			[]coordinationv1.Lease{lease("kwok-0", started), lease("kwok-1", started.Add(-400*time.Millisecond))}, true, ""},
		{"a lease of an earlier run", []corev1.Node{node("kwok-0", "True"), node("kwok-1", "True")},
			[]coordinationv1.Lease{lease("kwok-0", started), lease("kwok-1", started.Add(-2*time.Second))}, false, "1/2 Ready with a Lease renewed by this run (0 not Ready, e.g. ; 1 with no renewal yet)"},
		{"not registered", []corev1.Node{node("kwok-1", "True")},
			[]coordinationv1.Lease{lease("kwok-0", started), lease("kwok-1", started)}, false, "(1 not Ready, e.g. kwok-0;"},
		{"not Ready", []corev1.Node{node("kwok-0", "Unknown"), node("kwok-1", "False")},
			[]coordinationv1.Lease{lease("kwok-0", started), lease("kwok-1", started)}, false, "0/2 Ready"},
	} {
		ok, why := kwokNodesReady(want, tc.nodes, tc.leases, started)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %v %q, want %v and %q", tc.name, ok, why, tc.ok, tc.why)
		}
	}
}

// TestParallel: every index runs once, at most workers at a time; errors
// stop the rest and come back sorted and bounded.
func TestParallel(t *testing.T) {
	var runs, inFlight, peak atomic.Int64
	err := parallel(100, 4, func(int) error {
		runs.Add(1)
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		inFlight.Add(-1)
		return nil
	})
	if err != nil || runs.Load() != 100 || peak.Load() > 4 {
		t.Errorf("err %v, %d runs, peak %d", err, runs.Load(), peak.Load())
	}
	if err := parallel(0, 4, func(int) error { return errors.New("never") }); err != nil {
		t.Errorf("no work: %v", err)
	}
	err = parallel(10, 1, func(i int) error { return errors.New("boom") })
	if err == nil || err.Error() != "boom" {
		t.Errorf("one worker stops at the first error: %v", err)
	}
}
