package cluster

import (
	"strings"
	"testing"

	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

// TestStormFromChildren: the children's sync times merge into quantiles
// over every watch and per gate value; the storm lasts as long as its
// slowest child; 429s are summed.
func TestStormFromChildren(t *testing.T) {
	gates := []bool{true, false, true}
	stats := []StormChildStats{
		{Informers: 2, SyncMs: []float64{10, 20}, Seconds: 0.5, Requests: map[string]int64{"watch-list": 2}},
		{Informers: 3, SyncMs: []float64{100, 200, 300}, Seconds: 1.5, Requests: map[string]int64{"list rv=\"0\"": 3, "watch": 3, status429: 4}},
		{Informers: 1, SyncMs: []float64{30}, Seconds: 0.25, Requests: map[string]int64{"watch-list": 1, status429: 1}},
	}
	s := stormFromChildren(gates, stats)
	if s.Watches != 6 || s.Seconds != 1.5 || s.Status429 != 5 {
		t.Errorf("watches %d, seconds %v, 429s %d; want 6, 1.5, 5", s.Watches, s.Seconds, s.Status429)
	}
	if s.SyncP50Ms != 30 || s.SyncP99Ms != 300 || s.SyncMaxMs != 300 {
		t.Errorf("sync p50/p99/max %v/%v/%v, want 30/300/300", s.SyncP50Ms, s.SyncP99Ms, s.SyncMaxMs)
	}
	if len(s.ByGate) != 2 || !s.ByGate[0].WatchListClient || s.ByGate[0].Watches != 3 || s.ByGate[0].SyncMaxMs != 30 ||
		s.ByGate[0].Requests["watch-list"] != 3 || s.ByGate[1].WatchListClient || s.ByGate[1].SyncP50Ms != 200 {
		t.Errorf("by gate %+v", s.ByGate)
	}
	if e := stormFromChildren(nil, nil); e.Watches != 0 || e.SyncP99Ms != 0 || len(e.ByGate) != 0 {
		t.Errorf("no children: %+v", e)
	}
}

// TestScaleLineAndTargets: the storm ratios pair like the others, and the
// scale closing line and targets carry them.
func TestScaleLineAndTargets(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	rows := []Row{
		{Config: Upstream, Mode: modeSingle, Nodes: 1000, APICPUSec: 100, EtcdReads: 1000, ListP99Ms: p(200),
			Storm: &StormStats{SyncP99Ms: 4000, EtcdRequests: 2600, EtcdReads: 2000}},
		{Config: FreshRV0, Mode: modeSingle, Nodes: 1000, APICPUSec: 95, EtcdReads: 200, ListP99Ms: p(150),
			Storm: &StormStats{SyncP99Ms: 3000, EtcdRequests: 700, EtcdReads: 100, Rejected: map[string]float64{rejectFresh: 7}},
			Probe: ProbeStats{Writes: 3}, FreshWaitP99Ms: p(180.4)},
	}
	r := ComputeRatios(rows)
	want := "scale-bench ratios: nodes=1000 apiserver-cpu=0.95 etcd-reads=0.20 list-p99=0.75 storm-sync-p99=0.75 storm-etcd=0.05 stale=0 storm-429=7 wait-p99-ms=180"
	if got := r.ScaleLine(); got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
	targets := clusterTargets(r, true)
	if len(targets) != 8 {
		t.Fatalf("%d scale targets, want 8", len(targets))
	}
	for i, tg := range targets {
		want := "yes"
		if i == 5 { // the storm's 7 freshness 429s, where the target is none
			want = "no"
		}
		if tg[3] != want {
			t.Errorf("target %v judged %q, want %q", tg, tg[3], want)
		}
	}
	if tg := targets[6]; tg[1] != "180" || tg[2] != "< 200" {
		t.Errorf("wait p99 target %v", tg)
	}
	// The wait's target is KEP-2340's SLO, strictly under 200 ms; the etcd
	// reads' is half of upstream's.
	rows[1].FreshWaitP99Ms, rows[1].EtcdReads = p(200), 500
	if tg := clusterTargets(ComputeRatios(rows), true); tg[6][3] != "no" || tg[1][3] != "yes" {
		t.Errorf("wait p99 200 ms judged %v, etcd reads 0.50 judged %v", tg[6], tg[1])
	}
	rows[1].FreshWaitP99Ms, rows[1].EtcdReads = p(180.4), 200
	// The ratio is of reads: the writes both send during the storm
	// (600 each here) do not count.
	rows[1].Storm.EtcdReads = 400
	if tg := clusterTargets(ComputeRatios(rows), true)[4]; tg[3] != "no" {
		t.Errorf("storm etcd 0.2 judged %v", tg)
	}
	rows[0].Storm = nil
	if got := ComputeRatios(rows).ScaleLine(); !strings.Contains(got, "storm-sync-p99=n/a storm-etcd=n/a") || !strings.HasSuffix(got, "storm-429=7 wait-p99-ms=180") {
		t.Errorf("no upstream storm: %s", got)
	}
}

func TestStormTable(t *testing.T) {
	var b strings.Builder
	writeStorm(&b, []Row{{Config: Upstream}})
	if b.Len() != 0 {
		t.Errorf("a table without storms: %q", b.String())
	}
	writeStorm(&b, []Row{{Config: FreshRV0, Nodes: 1000, Repeat: 2, Storm: &StormStats{Watches: 1000, SyncP99Ms: 812,
		ByGate: []StormGate{{WatchListClient: true, SyncP99Ms: 900}}, APIPeakRSSMB: []float64{1234},
		Progress: &StormProgress{Requests: 41, Stalls: 17, Advances: 6}}}})
	writeStorm(&b, []Row{{Config: Upstream, Nodes: 1000, Storm: &StormStats{Watches: 1000, Progress: &StormProgress{}}}})
	out := b.String()
	reporttest.CheckContains(t, "storm table", out, "| freshcache-fresh-rv0 (repeat 2) | 1000 | 1000 |", "| 900 | – |", "| 1234 |",
		"| 41 / 17 / 6 |\n", "| 0 | – |\n")
}
