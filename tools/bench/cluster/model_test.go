package cluster

import (
	"math"
	"testing"
)

func TestFitLine(t *testing.T) {
	l := fitLine([]float64{10, 50, 100}, []float64{1.2, 3.2, 5.7})
	if math.Abs(l.B-0.05) > 1e-3 || math.Abs(l.A-0.7) > 0.05 || l.Points != 3 {
		t.Errorf("fit %+v", l)
	}
	if l := fitLine([]float64{20, 20}, []float64{2, 4}); l.A != 0 || l.B != 0.15 {
		t.Errorf("one distinct x: %+v, want through zero with slope 0.15", l)
	}
	if l := fitLine(nil, nil); l.A != 0 || l.B != 0 {
		t.Errorf("no points: %+v", l)
	}
}

func TestCostModelArithmetic(t *testing.T) {
	m := CostModel{
		Config: Upstream, Nodes: 100, Pods: 3000,
		IdleAPI: Line{A: 0.1, B: 0.001}, IdleEtcd: Line{A: 0.05, B: 0.0005}, IdleReads: Line{B: 0.1},
		Terms: []CostTerm{
			// 10 LISTs/s of one node's pods at 2 ms: per node, so 50x the
			// rate at the same pods per node.
			{Name: "node", Scale: scaleNodes, Rate: 10, APICPU: 0.002, EtcdCPU: 0.001, EtcdReads: 1},
			// 1 LIST/s of every pod at 30 ms: same rate, 50x the pods.
			{Name: "all", Scale: scaleCluster, Rate: 1, APICPU: 0.03, EtcdCPU: 0, EtcdReads: 0.5},
			// 5 pod changes/s at 10 ms: 50x the rate.
			{Name: "churn", Scale: scaleChurn, Rate: 5, APICPU: 0.01, EtcdCPU: 0.002, EtcdReads: 2},
		},
	}
	e := m.extrapolate(kepScale)
	want := []CostShare{
		{Name: "idle cluster", APICores: 0.1 + 5, EtcdCores: 0.05 + 2.5, EtcdReadsPerSec: 500},
		{Name: "node", APICores: 500 * 0.002, EtcdCores: 500 * 0.001, EtcdReadsPerSec: 500},
		{Name: "all", APICores: 0.03 * 50, EtcdCores: 0, EtcdReadsPerSec: 0.5},
		{Name: "churn", APICores: 250 * 0.01, EtcdCores: 250 * 0.002, EtcdReadsPerSec: 500},
	}
	if len(e.Parts) != len(want) {
		t.Fatalf("parts %+v", e.Parts)
	}
	var api, etcd, reads float64
	for i, w := range want {
		g := e.Parts[i]
		if g.Name != w.Name || !near(g.APICores, w.APICores) || !near(g.EtcdCores, w.EtcdCores) || !near(g.EtcdReadsPerSec, w.EtcdReadsPerSec) {
			t.Errorf("part %d = %+v, want %+v", i, g, w)
		}
		api, etcd, reads = api+w.APICores, etcd+w.EtcdCores, reads+w.EtcdReadsPerSec
	}
	if !near(e.APICores, api) || !near(e.EtcdCores, etcd) || !near(e.EtcdReadsPerSec, reads) {
		t.Errorf("totals %+v, want %v %v %v", e, api, etcd, reads)
	}
	// At the measured cluster the model gives back what was measured.
	if back := m.extrapolate(CostTarget{Nodes: 100, Pods: 3000}); !near(back.APICores, 0.2+0.02+0.03+0.05) {
		t.Errorf("at the measured shape: %v cores", back.APICores)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestBuildCostModelFromRows(t *testing.T) {
	calib := []CalibRow{
		{Kind: readListNode, RV: rvConsistent, APICPUMsPerReq: 2, EtcdCPUMsPerReq: 0.5, EtcdReadsPerReq: 1},
		{Kind: readListNode, RV: rvZero, APICPUMsPerReq: 1, EtcdCPUMsPerReq: -0.1, EtcdReadsPerReq: 0},
	}
	rows := []Row{
		{Config: Upstream, Mode: modeSingle, Nodes: 10, Pods: 300, Idle: IdleRates{APICPUPerSec: 0.2, EtcdCPUPerSec: 0.1}},
		{Config: Upstream, Mode: modeSingle, Nodes: 20, Pods: 600, Idle: IdleRates{APICPUPerSec: 0.3, EtcdCPUPerSec: 0.1, EtcdReadsPerSec: 1},
			WindowSeconds: 100, APICPUSec: 60, EtcdCPUSec: 20, EtcdReads: 1100, PodsCreated: 250, PodsDeleted: 250, Calibration: calib,
			Reads: []ReadStats{{Kind: readListNode, RV: rvConsistent, Rate: 10}, {Kind: readListNode, RV: rvZero, Rate: 10}}},
		{Config: Upstream, Mode: modeHA, Nodes: 20, Idle: IdleRates{APICPUPerSec: 9}},
	}
	m, ok := buildCostModel(rows, Upstream, 20)
	if !ok || m.Nodes != 20 || m.Pods != 600 {
		t.Fatalf("model %+v, %v", m, ok)
	}
	if !near(m.IdleAPI.B, 0.01) || !near(m.IdleAPI.A, 0.1) {
		t.Errorf("idle line %+v, want 0.1 + 0.01/node (HA rows left out)", m.IdleAPI)
	}
	if len(m.Terms) != 3 {
		t.Fatalf("terms %+v", m.Terms)
	}
	if !m.Terms[1].Clamped || m.Terms[1].EtcdCPU != 0 {
		t.Errorf("a negative etcd cost must be clamped: %+v", m.Terms[1])
	}
	// Churn: 0.6 cores - 0.3 idle - 10*2ms - 10*1ms = 0.27 cores over 5
	// pod changes/s.
	c := m.Terms[2]
	if c.Scale != scaleChurn || !near(c.Rate, 5) || !near(c.APICPU, 0.27/5) {
		t.Errorf("churn %+v", c)
	}
	if m.FetchShare != 0 || m.FetchRoundTrip != 0 {
		t.Errorf("upstream has no revision fetches: %+v", m)
	}
	if _, ok := buildCostModel(rows, FreshRV0, 20); ok {
		t.Error("a configuration without rows has no model")
	}
	// freshcache's top row: 800 of 1,000 window reads were fetches of
	// 4 ms on average.
	rows[1].Config, rows[1].RevisionFetches, rows[1].FetchSeconds = FreshRV0, 800, 3.2
	rows[0].Config = FreshRV0
	if m, ok := buildCostModel(rows, FreshRV0, 20); !ok || !near(m.FetchShare, 800.0/1100) || !near(m.FetchRoundTrip, 0.004) {
		t.Errorf("fetch share and round trip from the top row: %+v", m)
	}
}

func TestSharedFetchRate(t *testing.T) {
	cases := []struct {
		name      string
		rate, rtt float64
		want      float64
	}{
		{name: "no reads", rate: 0, rtt: 0.005, want: 0},
		{name: "no round trip: a fetch each", rate: 40, rtt: 0, want: 40},
		// 40/s at 1 ms: x = 0.04, a fetch answers 0.04 + e^-0.04 = 1.0008.
		{name: "slow reads get a fetch each", rate: 40, rtt: 0.001, want: 40 / (0.04 + math.Exp(-0.04))},
		// 10,000/s at 5 ms: x = 50, one fetch per round trip.
		{name: "fast reads: one fetch per round trip", rate: 10000, rtt: 0.005, want: 200},
		// x = 1: 1 / (1 + 1/e) of the rate.
		{name: "one read per round trip", rate: 100, rtt: 0.01, want: 100 / (1 + math.Exp(-1))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sharedFetchRate(c.rate, c.rtt); math.Abs(got-c.want) > 1e-6*max(1, c.want) {
				t.Errorf("sharedFetchRate(%v, %v) = %v, want %v", c.rate, c.rtt, got, c.want)
			}
		})
	}
	// Never more fetches than reads, nor more than one per round trip,
	// and more reads never need fewer fetches.
	prev := 0.0
	for rate := 1.0; rate < 1e5; rate *= 1.5 {
		f := sharedFetchRate(rate, 0.004)
		if f > rate+1e-9 || f > 1/0.004+1e-9 || f < prev-1e-9 {
			t.Fatalf("rate %v: %v fetches/s (before: %v)", rate, f, prev)
		}
		prev = f
	}
}

func TestCostModelSharesFetches(t *testing.T) {
	m := CostModel{
		Config: FreshRV0, Nodes: 100, Pods: 3000,
		// 10 reads/s per 100 nodes, a fetch each where measured.
		Terms:      []CostTerm{{Name: "node", Scale: scaleNodesOne, Rate: 10, EtcdReads: 1}},
		FetchShare: 0.8, FetchRoundTrip: 0.005,
	}
	e := m.extrapolate(kepScale)
	// 500 reads/s at the target, 400 of them fetches: 400/s at 5 ms is
	// x = 2, 400/(2+e^-2) fetches.
	shared := 400 / (2 + math.Exp(-2))
	if len(e.Parts) != 3 || !near(e.Parts[2].EtcdReadsPerSec, shared-400) || !near(e.EtcdReadsPerSec, 100+shared) {
		t.Fatalf("estimate %+v, want %v reads/s", e, 100+shared)
	}
	// Upstream's model has no fetches to share.
	m.FetchShare, m.FetchRoundTrip = 0, 0
	if e := m.extrapolate(kepScale); len(e.Parts) != 2 || !near(e.EtcdReadsPerSec, 500) {
		t.Fatalf("without fetches: %+v", e)
	}
}

func TestModelNodesIsCommonToEveryConfiguration(t *testing.T) {
	r := func(config, mode string, nodes int) Row {
		return Row{Config: config, Mode: mode, Nodes: nodes}
	}
	cases := []struct {
		name string
		rows []Row
		want int
	}{
		{"every configuration at every count", []Row{r(Upstream, modeSingle, 10), r(FreshRV0, modeSingle, 10), r(Upstream, modeSingle, 50), r(FreshRV0, modeSingle, 50)}, 50},
		{"upstream missing at the top", []Row{r(Upstream, modeSingle, 10), r(FreshRV0, modeSingle, 10), r(Freshcache, modeSingle, 10), r(FreshRV0, modeSingle, 100), r(Freshcache, modeSingle, 100)}, 10},
		{"HA rows do not count", []Row{r(Upstream, modeSingle, 10), r(Upstream, modeHA, 30), r(FreshRV0, modeHA, 30), r(FreshRV0, modeSingle, 10)}, 10},
		{"no common count", []Row{r(Upstream, modeSingle, 10), r(FreshRV0, modeSingle, 50)}, 0},
	}
	for _, c := range cases {
		if got := modelNodes(c.rows); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestCostModelTakesTheMedianRepeat: a repeated cell's model is built
// from the repeat with the median apiserver CPU, not from whichever came
// first.
func TestCostModelTakesTheMedianRepeat(t *testing.T) {
	row := func(repeat int, cpu float64, pods int) Row {
		return Row{Config: Upstream, Mode: modeSingle, Nodes: 75, Repeat: repeat, APICPUSec: cpu, Pods: pods}
	}
	for _, tc := range []struct {
		name     string
		rows     []Row
		wantPods int
	}{
		{"odd", []Row{row(1, 90, 1), row(2, 40, 2), row(3, 50, 3)}, 3},
		{"even takes the lower middle", []Row{row(1, 90, 1), row(2, 40, 2), row(3, 50, 3), row(4, 60, 4)}, 3},
		{"one", []Row{row(0, 10, 7)}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := medianRepeat(tc.rows); got.Pods != tc.wantPods {
				t.Errorf("median repeat %+v, want the one with pods=%d", got, tc.wantPods)
			}
			if m, ok := buildCostModel(tc.rows, Upstream, 75); !ok || m.Pods != tc.wantPods {
				t.Errorf("model from %d pods (%v), want %d", m.Pods, ok, tc.wantPods)
			}
		})
	}
}
