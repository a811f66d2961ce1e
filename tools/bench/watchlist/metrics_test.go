package watchlist

import (
	"math"
	"strings"
	"testing"
)

const freshText = `# TYPE apiserver_freshcache_read_wait_seconds histogram
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="configmaps",verb="list",requested="consistent",le="0.001"} 8
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="configmaps",verb="list",requested="consistent",le="0.01"} 10
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="configmaps",verb="list",requested="consistent",le="+Inf"} 10
apiserver_freshcache_read_wait_seconds_sum{group="",resource="configmaps",verb="list",requested="consistent"} 0.02
apiserver_freshcache_read_wait_seconds_count{group="",resource="configmaps",verb="list",requested="consistent"} 10
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="configmaps",verb="list",requested="zero",le="0.001"} 0
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="configmaps",verb="list",requested="zero",le="0.01"} 10
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="configmaps",verb="list",requested="zero",le="+Inf"} 10
apiserver_freshcache_read_wait_seconds_sum{group="",resource="configmaps",verb="list",requested="zero"} 0.05
apiserver_freshcache_read_wait_seconds_count{group="",resource="configmaps",verb="list",requested="zero"} 10
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="pods",verb="list",requested="consistent",le="0.001"} 99
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="pods",verb="list",requested="consistent",le="0.01"} 99
apiserver_freshcache_read_wait_seconds_bucket{group="",resource="pods",verb="list",requested="consistent",le="+Inf"} 99
apiserver_freshcache_read_wait_seconds_sum{group="",resource="pods",verb="list",requested="consistent"} 0.01
apiserver_freshcache_read_wait_seconds_count{group="",resource="pods",verb="list",requested="consistent"} 99
# TYPE apiserver_freshcache_read_release_seconds histogram
apiserver_freshcache_read_release_seconds_bucket{group="",resource="configmaps",verb="list",requested="consistent",le="0.001"} 10
apiserver_freshcache_read_release_seconds_bucket{group="",resource="configmaps",verb="list",requested="consistent",le="0.01"} 10
apiserver_freshcache_read_release_seconds_bucket{group="",resource="configmaps",verb="list",requested="consistent",le="+Inf"} 10
apiserver_freshcache_read_release_seconds_sum{group="",resource="configmaps",verb="list",requested="consistent"} 0.005
apiserver_freshcache_read_release_seconds_count{group="",resource="configmaps",verb="list",requested="consistent"} 10
# TYPE go_sched_latencies_seconds histogram
go_sched_latencies_seconds_bucket{le="0.0001"} 90
go_sched_latencies_seconds_bucket{le="0.01"} 99
go_sched_latencies_seconds_bucket{le="1"} 100
go_sched_latencies_seconds_bucket{le="+Inf"} 100
go_sched_latencies_seconds_sum 0.5
go_sched_latencies_seconds_count 100
# TYPE apiserver_freshcache_revision_fetch_duration_seconds histogram
apiserver_freshcache_revision_fetch_duration_seconds_bucket{result="success",le="0.001"} 4
apiserver_freshcache_revision_fetch_duration_seconds_bucket{result="success",le="+Inf"} 4
apiserver_freshcache_revision_fetch_duration_seconds_sum{result="success"} 0.002
apiserver_freshcache_revision_fetch_duration_seconds_count{result="success"} 4
apiserver_freshcache_revision_fetch_duration_seconds_bucket{result="error",le="0.001"} 0
apiserver_freshcache_revision_fetch_duration_seconds_bucket{result="error",le="+Inf"} 9
apiserver_freshcache_revision_fetch_duration_seconds_sum{result="error"} 90
apiserver_freshcache_revision_fetch_duration_seconds_count{result="error"} 9
# TYPE go_cpu_classes_gc_total_cpu_seconds_total counter
go_cpu_classes_gc_total_cpu_seconds_total 12.5
# TYPE apiserver_freshcache_reads_total counter
apiserver_freshcache_reads_total{group="",resource="configmaps",verb="list",requested="consistent",outcome="cache"} 18
apiserver_freshcache_reads_total{group="",resource="configmaps",verb="list",requested="consistent",outcome="fallback"} 2
apiserver_freshcache_reads_total{group="",resource="secrets",verb="get",requested="consistent",outcome="rejected"} 1
apiserver_freshcache_reads_total{group="",resource="secrets",verb="get",requested="consistent",outcome="over_budget"} 2
`

const upstreamText = `# TYPE apiserver_watch_cache_read_wait_seconds histogram
apiserver_watch_cache_read_wait_seconds_bucket{group="",resource="secrets",le="0.1"} 1
apiserver_watch_cache_read_wait_seconds_bucket{group="",resource="secrets",le="1"} 3
apiserver_watch_cache_read_wait_seconds_bucket{group="",resource="secrets",le="+Inf"} 4
apiserver_watch_cache_read_wait_seconds_sum{group="",resource="secrets"} 5
apiserver_watch_cache_read_wait_seconds_count{group="",resource="secrets"} 4
# TYPE apiserver_watch_cache_consistent_read_total counter
apiserver_watch_cache_consistent_read_total{group="",resource="secrets",success="true",fallback="true"} 3
apiserver_watch_cache_consistent_read_total{group="",resource="secrets",success="true",fallback="false"} 30
apiserver_watch_cache_consistent_read_total{group="",resource="secrets",success="false",fallback="skipped"} 1
`

func TestParseWaitsFreshcache(t *testing.T) {
	s, err := parseWaits(strings.NewReader(freshText))
	if err != nil {
		t.Fatal(err)
	}
	h := s.waits[waitKey{resConfigMaps, "list"}]
	if h.Count() != 20 || h[0.001] != 8 {
		t.Fatalf("configmaps/list summed over requested: %v", h)
	}
	if _, ok := s.waits[waitKey{"pods", "list"}]; ok {
		t.Fatal("pods were kept")
	}
	if s.fallbacks[waitKey{resConfigMaps, "list"}] != 2 || s.rejected[waitKey{resSecrets, "get"}] != 3 {
		t.Fatalf("outcomes: fallbacks %v rejected %v", s.fallbacks, s.rejected)
	}
	got := waitStats(waitSample{}, s)
	if len(got) != 2 || got[0].Resource != resConfigMaps || got[1].Resource != resSecrets {
		t.Fatalf("waitStats = %+v", got)
	}
	// Rank 10 of 20 falls in (1 ms, 10 ms], which holds 12 of them from
	// the 8 below: 1 + 9*(10-8)/12 = 2.5 ms.
	if got[0].Count != 20 || got[0].Fallbacks != 2 || math.Abs(got[0].P50Ms-2.5) > 1e-9 {
		t.Fatalf("configmaps: %+v, want 20 waits, p50 2.5 ms, 2 fallbacks", got[0])
	}
	if got[1].Count != 0 || got[1].Rejected != 3 || got[1].Release != nil {
		t.Fatalf("secrets: %+v", got[1])
	}
	if r := got[0].Release; r == nil || math.Abs(r.P50Ms-0.5) > 1e-9 || math.Abs(r.P99Ms-0.99) > 1e-9 {
		t.Fatalf("configmaps release: %+v, want p50 0.5 ms and p99 0.99 ms (all 10 in the first bucket)", r)
	}
	rt := runtimeStats(waitSample{gcCPU: 2.5}, s, 5)
	if rt.GCCores != 2 || rt.SchedLatency == nil || math.Abs(rt.SchedLatency.P99Ms-10) > 1e-9 {
		t.Fatalf("runtime %+v (sched %+v), want 2 GC cores and a 10 ms p99", rt, rt.SchedLatency)
	}
	if f := rt.RevisionFetch; f == nil || math.Abs(f.P99Ms-0.99) > 1e-9 {
		t.Fatalf("revision fetch %+v, want the 4 successes' p99 0.99 ms (errors left out)", f)
	}
	if rt := runtimeStats(s, s, 5); rt.SchedLatency != nil || rt.GCCores != 0 || rt.RevisionFetch != nil {
		t.Fatalf("no change: %+v", rt)
	}
}

func TestParseWaitsUpstreamDelta(t *testing.T) {
	before, err := parseWaits(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseWaits(strings.NewReader(upstreamText))
	if err != nil {
		t.Fatal(err)
	}
	got := waitStats(before, after)
	if len(got) != 1 {
		t.Fatalf("waitStats = %+v", got)
	}
	w := got[0]
	if w.Resource != resSecrets || w.Verb != verbAny || w.Count != 4 || w.Fallbacks != 3 || w.Rejected != 1 {
		t.Fatalf("upstream secrets: %+v", w)
	}
	// p99: rank 3.96 of 4 is in +Inf, which answers the largest bound.
	if w.P99Ms != 1000 {
		t.Fatalf("p99 = %v ms, want 1000", w.P99Ms)
	}
	// Between two equal scrapes nothing happened: no rows.
	if rows := waitStats(after, after); len(rows) != 0 {
		t.Fatalf("no change gave rows %+v", rows)
	}
}

func TestParseWaitsRefusesGarbage(t *testing.T) {
	if _, err := parseWaits(strings.NewReader("not { a metric")); err == nil {
		t.Fatal("garbage parsed")
	}
}
