package upstreame2e

import "testing"

func TestLabelAndServedFromCache(t *testing.T) {
	labels := `group="",outcome="cache",requested="consistent",resource="pods",verb="list"`
	if got := label(labels, "verb") + " " + label(labels, "requested") + " " + label(labels, "outcome"); got != "list consistent cache" {
		t.Errorf("labels = %q", got)
	}
	if got := label(labels, "missing"); got != "" {
		t.Errorf("missing label = %q", got)
	}
	reads := delta(
		map[string]float64{"list consistent cache": 3, "get consistent fallback": 1},
		map[string]float64{"list consistent cache": 10, "get consistent fallback": 1, "watch consistent cache": 2, "get consistent error": 1},
	)
	if len(reads) != 3 || reads["list consistent cache"] != 7 {
		t.Errorf("delta = %v", reads)
	}
	if got := ServedFromCache(reads); got != 9 {
		t.Errorf("ServedFromCache = %v, want 9", got)
	}
}
