package upstreame2e

import "testing"

func TestSpecName(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"[It] [sig-apps] Deployment works [Conformance] [sig-apps, Conformance]", "[sig-apps] Deployment works [Conformance]", true},
		{"[It] [sig-apps] ReplicaSet works [sig-apps]", "[sig-apps] ReplicaSet works", true},
		{"[SynchronizedBeforeSuite]", "", false},
		{"[ReportAfterSuite] Kubernetes e2e suite report", "", false},
	} {
		got, ok := SpecName(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("SpecName(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestReadJUnitAndTally(t *testing.T) {
	specs, suite, err := ReadJUnit("testdata/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{
		"[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]": Passed,
		"[sig-apps] Deployment deployment should support rollover [Conformance]":                                              Failed,
		"[sig-node] Lease lease API should be available [Conformance]":                                                        Failed,
		"[sig-api-machinery] Servers with support for Table transformation should return pod details":                         Skipped,
	}
	if len(specs) != len(want) {
		t.Fatalf("got %d specs, want %d: %v", len(specs), len(want), specs)
	}
	for n, o := range want {
		if specs[n].Outcome != o {
			t.Errorf("%q: %v, want %v", n, specs[n].Outcome, o)
		}
	}
	if m := specs["[sig-apps] Deployment deployment should support rollover [Conformance]"].Message; m != "timed out waiting for the condition" {
		t.Errorf("message = %q, want its first line", m)
	}
	if len(suite) != 1 || suite[0].Name != "[ReportAfterSuite] Kubernetes e2e suite report" {
		t.Errorf("failed suite nodes = %v", suite)
	}
	sel := []string{
		"[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]",
		"[sig-apps] Deployment deployment should support rollover [Conformance]",
		"[sig-api-machinery] Servers with support for Table transformation should return pod details",
		"[sig-x] never ran",
	}
	c, missing := Tally(sel, specs)
	if c != (Counts{Passed: 1, Failed: 2, Skipped: 1}) || len(missing) != 1 || missing[0] != "[sig-x] never ran" {
		t.Errorf("Tally = %+v, %v", c, missing)
	}
}
