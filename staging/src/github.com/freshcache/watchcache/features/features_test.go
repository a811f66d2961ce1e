package features

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

func TestGateDefaults(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{string(ConsistentReadsFromCache), true},
		{string(FreshResourceVersionZero), false},
		{string(CacheInconsistencyDetection), true},
		{string(DirectEtcdWatch), false},
		{string(RevisionsFromWrites), true},
		{string(HoldReadsForWrites), false},
		{string(ProgressFromOwnWrites), false},
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ok := known[featureOf(c.name)]
			if !ok {
				t.Fatalf("gate %s not registered", c.name)
			}
			if got := Enabled(featureOf(c.name)); got != c.want {
				t.Fatalf("default of %s = %v, want %v", c.name, got, c.want)
			}
		})
	}
}

func TestGateCanBeFlipped(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, FreshResourceVersionZero, true)
	if !Enabled(FreshResourceVersionZero) {
		t.Fatal("FreshResourceVersionZero did not switch on")
	}
}

func TestSetFromFlagSyntax(t *testing.T) {
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if err := gate.Set("ConsistentReadsFromCache=false,FreshResourceVersionZero=true"); err != nil {
		t.Fatalf("--feature-gates syntax refused: %v", err)
	}
	if gate.Enabled(ConsistentReadsFromCache) || !gate.Enabled(FreshResourceVersionZero) {
		t.Fatal("gates did not take the values given in --feature-gates syntax")
	}
	if err := gate.Set("FreshResourceVersionZero=maybe"); err == nil {
		t.Fatal("a malformed gate value was accepted")
	}
}

func featureOf(name string) featuregate.Feature { return featuregate.Feature(name) }
