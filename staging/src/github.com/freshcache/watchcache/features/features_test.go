package features

import (
	"reflect"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// With no flag given, Current reports each gate's registered default.
func TestGateDefaults(t *testing.T) {
	want := Set{
		ConsistentReadsFromCache:    true,
		FreshResourceVersionZero:    true,
		CacheInconsistencyDetection: true,
		RevisionsFromWrites:         true,
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for g := range Specs() {
		if _, ok := known[g]; !ok {
			t.Fatalf("gate %s not registered", g)
		}
	}
	if got := Current(); got != want {
		t.Fatalf("Current() = %+v, want %+v", got, want)
	}
}

// Every registered gate moves exactly one field of Current, the field of
// its own name, and no gate is left out of Set.
func TestCurrentReadsEveryGate(t *testing.T) {
	if n, m := reflect.TypeOf(Set{}).NumField(), len(Specs()); n != m {
		t.Fatalf("Set has %d fields for %d gates", n, m)
	}
	for g := range Specs() {
		t.Run(string(g), func(t *testing.T) {
			before := reflect.ValueOf(Current())
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, g, !utilfeature.DefaultFeatureGate.Enabled(g))
			after := reflect.ValueOf(Current())
			var moved []string
			for i := range before.NumField() {
				if before.Field(i).Bool() != after.Field(i).Bool() {
					moved = append(moved, before.Type().Field(i).Name)
				}
			}
			if len(moved) != 1 || moved[0] != string(g) {
				t.Fatalf("flipping %s moved %v", g, moved)
			}
		})
	}
}

func TestSetFromFlagSyntax(t *testing.T) {
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if err := gate.Set("ConsistentReadsFromCache=false,FreshResourceVersionZero=false"); err != nil {
		t.Fatalf("--feature-gates syntax refused: %v", err)
	}
	if gate.Enabled(ConsistentReadsFromCache) || gate.Enabled(FreshResourceVersionZero) {
		t.Fatal("gates did not take the values given in --feature-gates syntax")
	}
	if err := gate.Set("FreshResourceVersionZero=maybe"); err == nil {
		t.Fatal("a malformed gate value was accepted")
	}
}
