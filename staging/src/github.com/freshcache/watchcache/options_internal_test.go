package watchcache

import (
	"testing"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/freshcache/watchcache/features"
)

// TestInconsistencyDetectionResolvesOnce: the option overrides the gate,
// nil follows it, the period defaults to upstream's, and a decorator's
// options keep the gate's value from when they were resolved.
func TestInconsistencyDetectionResolvesOnce(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name   string
		gate   bool
		option *bool
		want   bool
	}{
		{"gate on", true, nil, true},
		{"gate off", false, nil, false},
		{"option on over gate off", false, &yes, true},
		{"option off over gate on", true, &no, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CacheInconsistencyDetection, tc.gate)
			o := Options{InconsistencyDetection: tc.option}
			r, err := o.resolve(0)
			if err != nil {
				t.Fatal(err)
			}
			if r.detectInconsistency != tc.want {
				t.Fatalf("detectInconsistency = %v, want %v", r.detectInconsistency, tc.want)
			}
			if r.InconsistencyCheckPeriod != DefaultInconsistencyCheckPeriod {
				t.Fatalf("period %v, want the default %v", r.InconsistencyCheckPeriod, DefaultInconsistencyCheckPeriod)
			}
			pinned := o.withGatesResolved()
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CacheInconsistencyDetection, !tc.gate)
			r, err = pinned.resolve(0)
			if err != nil {
				t.Fatal(err)
			}
			if r.detectInconsistency != tc.want {
				t.Fatalf("after the gate flipped: detectInconsistency = %v, want %v (pinned)", r.detectInconsistency, tc.want)
			}
		})
	}
	r, err := Options{InconsistencyCheckPeriod: time.Second}.resolve(0)
	if err != nil || r.InconsistencyCheckPeriod != time.Second {
		t.Fatalf("period %v (%v), want 1s", r.InconsistencyCheckPeriod, err)
	}
}
