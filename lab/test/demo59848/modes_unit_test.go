package demo59848

import "testing"

// TestWhichRunsMustNotStartThePod: the demo's assertions, per
// implementation and kubelet mode.
func TestWhichRunsMustNotStartThePod(t *testing.T) {
	for _, tc := range []struct {
		impl, watchList string
		want            bool
	}{
		{"freshcache", "on", true},
		{"freshcache", "off", true},
		{"freshcache-rv0-off", "on", true},
		{"freshcache-rv0-off", "off", false},
		{"upstream", "on", false},
		{"upstream", "off", false},
	} {
		if got := mustNotStart(tc.impl, tc.watchList); got != tc.want {
			t.Errorf("mustNotStart(%s, watchlist=%s) = %v, want %v", tc.impl, tc.watchList, got, tc.want)
		}
	}
}

func TestSelectedAndTrials(t *testing.T) {
	all := selected("")
	if !all("upstream") || !all("off") {
		t.Fatal("an empty selection must select everything")
	}
	some := selected("upstream, freshcache-rv0-off")
	if !some("upstream") || !some("freshcache-rv0-off") || some("freshcache") {
		t.Fatal("a list must select exactly its names")
	}
	for in, want := range map[string]int{"": 1, "3": 3, "20": 20} {
		if n, err := trialCount(in); err != nil || n != want {
			t.Errorf("trialCount(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"0", "-1", "21", "three"} {
		if _, err := trialCount(bad); err == nil {
			t.Errorf("trialCount(%q) accepted", bad)
		}
	}
}
