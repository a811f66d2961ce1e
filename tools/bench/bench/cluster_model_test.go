package bench

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
		Config: ClusterUpstream, Nodes: 100, Pods: 3000,
		IdleAPI: Line{A: 0.1, B: 0.001}, IdleEtcd: Line{A: 0.05, B: 0.0005}, IdleReads: Line{B: 0.1},
		Terms: []CostTerm{
			// 10 LISTs/s of one node's pods at 2 ms: per node, so 50x the
			// rate at the same pods per node.
			{Name: "node", Scale: ScaleNodes, Rate: 10, APICPU: 0.002, EtcdCPU: 0.001, EtcdReads: 1},
			// 1 LIST/s of every pod at 30 ms: same rate, 50x the pods.
			{Name: "all", Scale: ScaleCluster, Rate: 1, APICPU: 0.03, EtcdCPU: 0, EtcdReads: 0.5},
			// 5 pod changes/s at 10 ms: 50x the rate.
			{Name: "churn", Scale: ScaleChurn, Rate: 5, APICPU: 0.01, EtcdCPU: 0.002, EtcdReads: 2},
		},
	}
	e := m.Extrapolate(KEPScale)
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
	if back := m.Extrapolate(CostTarget{Nodes: 100, Pods: 3000}); !near(back.APICores, 0.2+0.02+0.03+0.05) {
		t.Errorf("at the measured shape: %v cores", back.APICores)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestBuildCostModelFromRows(t *testing.T) {
	calib := []CalibRow{
		{Kind: ReadListNode, RV: RVConsistent, APICPUMsPerReq: 2, EtcdCPUMsPerReq: 0.5, EtcdReadsPerReq: 1},
		{Kind: ReadListNode, RV: RVZero, APICPUMsPerReq: 1, EtcdCPUMsPerReq: -0.1, EtcdReadsPerReq: 0},
	}
	rows := []ClusterRow{
		{Config: ClusterUpstream, Mode: ModeSingle, Nodes: 10, Pods: 300, Idle: IdleRates{APICPUPerSec: 0.2, EtcdCPUPerSec: 0.1}},
		{Config: ClusterUpstream, Mode: ModeSingle, Nodes: 20, Pods: 600, Idle: IdleRates{APICPUPerSec: 0.3, EtcdCPUPerSec: 0.1, EtcdReadsPerSec: 1},
			WindowSeconds: 100, APICPUSec: 60, EtcdCPUSec: 20, EtcdReads: 1100, PodsCreated: 250, PodsDeleted: 250, Calibration: calib,
			Reads: []ReadStats{{Kind: ReadListNode, RV: RVConsistent, Rate: 10}, {Kind: ReadListNode, RV: RVZero, Rate: 10}}},
		{Config: ClusterUpstream, Mode: ModeHA, Nodes: 20, Idle: IdleRates{APICPUPerSec: 9}},
	}
	m, ok := buildCostModel(rows, ClusterUpstream)
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
	if c.Scale != ScaleChurn || !near(c.Rate, 5) || !near(c.APICPU, 0.27/5) {
		t.Errorf("churn %+v", c)
	}
	if _, ok := buildCostModel(rows, ClusterFreshRV0); ok {
		t.Error("a configuration without rows has no model")
	}
}
