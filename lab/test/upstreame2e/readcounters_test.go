package upstreame2e

import (
	"testing"

	"github.com/freshcache/freshcache/lab/internal/scrape"
	"github.com/freshcache/freshcache/lab/pkg/counters"
)

// The counters come out of /metrics text as kube-apiserver exposes them,
// summed over resources.
func TestSumReadsFromExposition(t *testing.T) {
	body := []byte(`# HELP apiserver_freshcache_reads_total Reads that needed freshness.
# TYPE apiserver_freshcache_reads_total counter
apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="pods",verb="list"} 5
apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="configmaps",verb="list"} 2
apiserver_freshcache_reads_total{group="apps",outcome="fallback",requested="consistent",resource="deployments",verb="get"} 1
apiserver_freshcache_reads_total_other{verb="list"} 9
apiserver_request_total{verb="LIST"} 7
`)
	samples, err := scrape.Samples(body)
	if err != nil {
		t.Fatal(err)
	}
	got := sumReads(samples)
	want := map[string]float64{"list consistent cache": 7, "get consistent fallback": 1}
	if len(got) != len(want) {
		t.Fatalf("sumReads = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("sumReads[%q] = %v, want %v", k, got[k], v)
		}
	}
}

func TestLabelAndServedFromCache(t *testing.T) {
	labels := `group="",outcome="cache",requested="consistent",resource="pods",verb="list"`
	if got := label(labels, "verb") + " " + label(labels, "requested") + " " + label(labels, "outcome"); got != "list consistent cache" {
		t.Errorf("labels = %q", got)
	}
	if got := label(labels, "missing"); got != "" {
		t.Errorf("missing label = %q", got)
	}
	reads := counters.Delta(
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
