package watchcache

import (
	"fmt"
	"testing"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
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

// Each gate a cache's Options can override: nil follows the gate, a value
// overrides it, and the resolved options keep what they resolved to after
// the gate and the caller's bool change.
func TestGateOverridesResolveOnce(t *testing.T) {
	gates := []struct {
		gate featuregate.Feature
		set  func(*Options, *bool)
		read func(resolved) bool
	}{
		{features.ConsistentReadsFromCache, func(o *Options, b *bool) { o.ConsistentReadsFromCache = b }, func(r resolved) bool { return r.consistentReads }},
		{features.FreshResourceVersionZero, func(o *Options, b *bool) { o.FreshResourceVersionZero = b }, func(r resolved) bool { return r.freshRVZero }},
		{features.CacheInconsistencyDetection, func(o *Options, b *bool) { o.InconsistencyDetection = b }, func(r resolved) bool { return r.detectInconsistency }},
		{features.RevisionsFromWrites, func(o *Options, b *bool) { o.RevisionsFromWrites = b }, func(r resolved) bool { return r.revisionsFromWrites }},
	}
	if n := len((&Options{}).gateOverrides()); n != len(gates) {
		t.Fatalf("%d overridable gates, the test knows %d", n, len(gates))
	}
	for _, g := range gates {
		for _, gateOn := range []bool{false, true} {
			for _, override := range []string{"nil", "on", "off"} {
				t.Run(fmt.Sprintf("%s=%v/override %s", g.gate, gateOn, override), func(t *testing.T) {
					featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, g.gate, gateOn)
					var o Options
					want := gateOn
					var b *bool
					if override != "nil" {
						v := override == "on"
						b, want = &v, v
					}
					g.set(&o, b)
					pinned := o.withGatesResolved()
					r, err := o.resolve(0)
					if err != nil {
						t.Fatal(err)
					}
					if got := g.read(r); got != want {
						t.Fatalf("resolved %v, want %v", got, want)
					}
					featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, g.gate, !gateOn)
					if b != nil {
						*b = !*b
					}
					r, err = pinned.resolve(0)
					if err != nil {
						t.Fatal(err)
					}
					if got := g.read(r); got != want {
						t.Fatalf("after the gate and the caller's bool flipped: %v, want %v (pinned)", got, want)
					}
				})
			}
		}
	}
}

// ProgressFromOwnWrites is on unless an embedder turns it off.
func TestProgressFromOwnWritesDefault(t *testing.T) {
	off, on := false, true
	for _, tc := range []struct {
		name string
		opt  *bool
		want bool
	}{{"nil", nil, true}, {"on", &on, true}, {"off", &off, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Options{ProgressFromOwnWrites: tc.opt}.resolve(0)
			if err != nil {
				t.Fatal(err)
			}
			if r.progressFromOwnWrites != tc.want {
				t.Fatalf("progressFromOwnWrites = %v, want %v", r.progressFromOwnWrites, tc.want)
			}
		})
	}
}
