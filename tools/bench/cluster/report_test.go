package cluster

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

func TestClusterRatiosAndClosingLine(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	rows := []Row{
		{Config: Upstream, Mode: modeSingle, Nodes: 10, APICPUSec: 10, EtcdReads: 100, ListP99Ms: p(20)},
		{Config: FreshRV0, Mode: modeSingle, Nodes: 10, APICPUSec: 9, EtcdReads: 10, ListP99Ms: p(10)},
		{Config: Upstream, Mode: modeSingle, Nodes: 50, APICPUSec: 40, EtcdReads: 400, ListP99Ms: p(40)},
		{Config: FreshRV0, Mode: modeSingle, Nodes: 50, APICPUSec: 42, EtcdReads: 100, ListP99Ms: p(30),
			Probe: ProbeStats{Writes: 5, Stale: map[string]int64{"list rv=0": 1}}},
		// Only freshcache-fresh-rv0 at 100 nodes: no pair, not the headline.
		{Config: FreshRV0, Mode: modeSingle, Nodes: 100, APICPUSec: 1},
		// HA rows never make the ratios.
		{Config: Upstream, Mode: modeHA, Nodes: 50, APICPUSec: 1000},
		// Plain freshcache: its rv=0 answers may be stale by design; its
		// rv="" ones may not.
		{Config: Freshcache, Mode: modeHA, Nodes: 50, Probe: ProbeStats{Writes: 5, Stale: map[string]int64{"get rv=0": 4, `get rv=""`: 2}}},
		{Config: Upstream, Mode: modeHA, Nodes: 50, Probe: ProbeStats{Writes: 5, Stale: map[string]int64{`list rv=""`: 9}}},
	}
	r := ComputeRatios(rows)
	if r.Nodes != 50 {
		t.Fatalf("headline at %d nodes, want 50", r.Nodes)
	}
	want := "cluster-bench ratios: apiserver-cpu=1.05 etcd-reads=0.25 list-p99=0.75 stale=3"
	if got := r.Line(); got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
	if got := ComputeRatios(rows[:1]).Line(); got != "cluster-bench ratios: apiserver-cpu=n/a etcd-reads=n/a list-p99=n/a stale=n/a" {
		t.Errorf("upstream alone: %s", got)
	}
	if strings.Count(r.Line(), "\n") != 0 {
		t.Error("the closing line must be one line")
	}
	targets := clusterTargets(r, false)
	if targets[0][3] != "yes" || targets[1][3] != "yes" || targets[2][3] != "yes" || targets[3][3] != "no" {
		t.Errorf("targets %v", targets)
	}
}

// TestClusterRatiosMedianOverRepeats: repeated cells pair by repeat, and
// each ratio is the median over the pairs, with every pair's ratio kept
// for the report; the markdown names each row's repeat.
func TestClusterRatiosMedianOverRepeats(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	row := func(config string, repeat int, cpu, reads, p99 float64) Row {
		return Row{Config: config, Mode: modeSingle, Nodes: 75, Repeat: repeat, APICPUSec: cpu, EtcdReads: reads, ListP99Ms: p(p99)}
	}
	rows := []Row{
		// Out of order on purpose: pairs are by repeat, not by position.
		row(FreshRV0, 3, 52, 80, 300), row(Upstream, 1, 50, 100, 100),
		row(FreshRV0, 1, 60, 40, 90), row(Upstream, 2, 40, 100, 200),
		row(Upstream, 3, 40, 100, 200), row(FreshRV0, 2, 42, 60, 190),
	}
	r := ComputeRatios(rows)
	if r.Pairs != 3 {
		t.Fatalf("%d pairs, want 3", r.Pairs)
	}
	eq := func(got []float64, want ...float64) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if d := got[i] - want[i]; d > 1e-9 || d < -1e-9 {
				return false
			}
		}
		return true
	}
	if !eq(r.APICPUEach, 1.2, 1.05, 1.3) || !eq(r.EtcdReadsEach, 0.4, 0.6, 0.8) || !eq(r.ListP99Each, 0.9, 0.95, 1.5) {
		t.Errorf("pairs: cpu %v reads %v p99 %v", r.APICPUEach, r.EtcdReadsEach, r.ListP99Each)
	}
	if want := "cluster-bench ratios: apiserver-cpu=1.20 etcd-reads=0.60 list-p99=0.95 stale=n/a"; r.Line() != want {
		t.Errorf("line\n got %s\nwant %s", r.Line(), want)
	}
	targets := clusterTargets(r, false)
	if targets[0][1] != "1.20 (pairs: 1.20, 1.05, 1.30)" || targets[0][3] != "no" || targets[2][3] != "yes" {
		t.Errorf("targets %v", targets)
	}
	b := reporttest.Render(t, func(w io.Writer) error {
		return WriteMarkdown(w, NewReport(Config{Configs: []string{Upstream, FreshRV0}, Nodes: []int{75}, Repeats: 3}, rows, nil), nil)
	})
	reporttest.CheckContains(t, "the report", b, "| freshcache-fresh-rv0 | single #3 | 75 |", "median over the 3 pairs")
}

// TestOverloadedCellNotComparable: a freshcache-fresh-rv0 cell that served
// far less than upstream's cell has lower CPU and etcd figures because it
// did less; those targets say so instead of "yes". Its latency is still
// judged.
func TestOverloadedCellNotComparable(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	cell := func(config string, cpu, reads float64, listOK int64, churn int, p99 float64) Row {
		return Row{Config: config, Mode: modeSingle, Nodes: 100, APICPUSec: cpu, EtcdReads: reads, ListP99Ms: p(p99),
			Reads: []ReadStats{{Kind: readListNode, RV: rvConsistent, OK: listOK / 2}, {Kind: readListNode, RV: rvZero, OK: listOK / 2}}, PodsCreated: churn / 2, PodsDeleted: churn / 2}
	}
	for _, tc := range []struct {
		name             string
		listOK           int64
		churn            int
		wantWork         float64
		wantCPU, wantEtc string
	}{
		{"same work", 2470, 586, 1, "yes", "yes"},
		{"lists fell behind", 1060, 586, 1060.0 / 2470, "not comparable: 43% of upstream's work served", "not comparable: 43% of upstream's work served"},
		{"churn fell behind", 2470, 352, 352.0 / 586, "not comparable: 60% of upstream's work served", "not comparable: 60% of upstream's work served"},
		{"within the margin", 2300, 560, 2300.0 / 2470, "yes", "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ComputeRatios([]Row{
				cell(Upstream, 100, 1000, 2470, 586, 100),
				cell(FreshRV0, 90, 300, tc.listOK, tc.churn, 200),
			})
			if r.Work == nil || *r.Work < tc.wantWork-1e-9 || *r.Work > tc.wantWork+1e-9 {
				t.Fatalf("work %v, want %.3f", r.Work, tc.wantWork)
			}
			got := clusterTargets(r, false)
			if got[0][3] != tc.wantCPU || got[1][3] != tc.wantEtc || got[2][3] != "no" {
				t.Errorf("targets %q %q %q", got[0][3], got[1][3], got[2][3])
			}
		})
	}
}

func TestPromisedStale(t *testing.T) {
	stale := map[string]int64{"get rv=0": 1, "list rv=0": 2, `get rv=""`: 4, `list rv=""`: 8}
	if got := promisedStale(Row{Config: Freshcache, Probe: ProbeStats{Stale: stale}}); got != 12 {
		t.Errorf("freshcache: %d, want the rv=\"\" ones (12)", got)
	}
	if got := promisedStale(Row{Config: FreshRV0, Probe: ProbeStats{Stale: stale}}); got != 15 {
		t.Errorf("freshcache-fresh-rv0: %d, want all (15)", got)
	}
	// Read through another apiserver right after the write: inside rv=0's
	// staleness bound, so only rv="" is promised.
	if got := promisedStale(Row{Config: FreshRV0, Probe: ProbeStats{Stale: stale, CrossServer: true}}); got != 12 {
		t.Errorf("freshcache-fresh-rv0 across apiservers: %d, want the rv=\"\" ones (12)", got)
	}
}

// TestClusterReportAndPlots renders a two-configuration, two-N report with
// an HA row: the markdown carries the closing line, every section and the
// plots' links, and each plot is a PNG.
func TestClusterReportAndPlots(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	row := func(config, mode string, nodes int, cpu float64) Row {
		return Row{Config: config, Mode: mode, Nodes: nodes, Pods: 10 * nodes, WindowSeconds: 10, APICPUSec: cpu, EtcdReads: 100, ListP99Ms: p(cpu),
			Probe:       ProbeStats{Writes: 3, Reads: map[string]int64{`get rv=""`: 3}, Stale: map[string]int64{}},
			Reads:       []ReadStats{{Kind: readListNode, RV: rvConsistent, Rate: 1, Sent: 10, OK: 10}},
			Informers:   []InformerStats{{WatchListClient: true, Informers: 1, Syncs: 2, SyncMs: []float64{5, 7}, Requests: map[string]int64{"watch-list": 2}}},
			Idle:        IdleRates{Seconds: 3, APICPUPerSec: 0.1},
			Calibration: []CalibRow{{Kind: readListNode, RV: rvConsistent, Requests: 10, APICPUMsPerReq: 2}},
			Latency:     []Quantiles{{Key: "LIST cluster", Count: 10, P50Ms: 3, P99Ms: cpu}},
			PodsCreated: 5, PodsDeleted: 5}
	}
	rows := []Row{
		row(Upstream, modeSingle, 2, 4), row(FreshRV0, modeSingle, 2, 4),
		row(Upstream, modeSingle, 4, 8), row(FreshRV0, modeSingle, 4, 6),
		row(FreshRV0, modeHA, 4, 9),
	}
	cfg := Config{Configs: []string{Upstream, FreshRV0}, Nodes: []int{2, 4}, HANodes: 4}
	rep := NewReport(cfg, rows, nil)
	if len(rep.Models) != 2 || len(rep.Estimates) != 2 {
		t.Fatalf("%d models, %d estimates", len(rep.Models), len(rep.Estimates))
	}
	dir := t.TempDir()
	plots, err := Plot(rows, dir, "cluster", "")
	if err != nil || len(plots) != 1 || filepath.Base(plots[0]) != "cluster.png" {
		t.Fatalf("plots %v, %v", plots, err)
	}
	reporttest.CheckPNGs(t, plots)
	if none, err := Plot([]Row{{Config: Upstream, Nodes: 2}}, dir, "empty", NodesKwok); err != nil || none != nil {
		t.Errorf("rows with nothing to draw: %v, %v; want no file", none, err)
	}
	md := reporttest.Render(t, func(w io.Writer) error { return WriteMarkdown(w, rep, []string{"cluster.png"}) })
	reporttest.CheckContains(t, "markdown", md,
		"cluster-bench ratios: apiserver-cpu=0.75 etcd-reads=1.00 list-p99=0.75 stale=0",
		"## Per configuration", "## etcd requests in the window", "## Pod request latency by verb and scope",
		"## Calibration", "## Cost model: 5000 nodes", "What the extrapolation assumes", "## What this cannot measure",
		"![cluster](cluster.png)", "| freshcache-fresh-rv0 | ha | 4 |",
	)
}

func TestWaitPartsTable(t *testing.T) {
	var b strings.Builder
	writeClusterWaitParts(&b, []Row{{Config: Upstream, Mode: modeSingle, Nodes: 10}})
	if b.Len() != 0 {
		t.Fatalf("rows without pieces must give no table: %q", b.String())
	}
	rows := []Row{
		{Config: Upstream, Mode: modeSingle, Nodes: 10, WaitParts: []Quantiles{{Key: waitPartWait, Count: 5, P50Ms: 1, P99Ms: 2}, {Key: waitPartFetch, Count: 5, P50Ms: 3, P99Ms: 4.5}}},
		{Config: FreshRV0, Mode: modeSingle, Nodes: 10, WaitParts: []Quantiles{{Key: waitPartRelease, Count: 7, P50Ms: 0.5, P99Ms: 9}}},
	}
	writeClusterWaitParts(&b, rows)
	for _, want := range []string{
		"| upstream | single | 10 | 1.0 / 2.0 (5) | – | 3.0 / 4.5 (5) |",
		"| freshcache-fresh-rv0 | single | 10 | – | 0.5 / 9.0 (7) | – |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no row %q in\n%s", want, b.String())
		}
	}
}
