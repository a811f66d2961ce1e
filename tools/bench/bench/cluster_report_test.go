package bench

import (
	"strings"
	"testing"
)

func TestClusterRatiosAndClosingLine(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	rows := []ClusterRow{
		{Config: ClusterUpstream, Mode: ModeSingle, Nodes: 10, APICPUSec: 10, EtcdReads: 100, ListP99Ms: p(20)},
		{Config: ClusterFreshRV0, Mode: ModeSingle, Nodes: 10, APICPUSec: 9, EtcdReads: 10, ListP99Ms: p(10)},
		{Config: ClusterUpstream, Mode: ModeSingle, Nodes: 50, APICPUSec: 40, EtcdReads: 400, ListP99Ms: p(40)},
		{Config: ClusterFreshRV0, Mode: ModeSingle, Nodes: 50, APICPUSec: 42, EtcdReads: 100, ListP99Ms: p(30),
			Probe: ProbeStats{Writes: 5, Stale: map[string]int64{"list rv=0": 1}}},
		// Only freshcache-fresh-rv0 at 100 nodes: no pair, not the headline.
		{Config: ClusterFreshRV0, Mode: ModeSingle, Nodes: 100, APICPUSec: 1},
		// HA rows never make the ratios.
		{Config: ClusterUpstream, Mode: ModeHA, Nodes: 50, APICPUSec: 1000},
		// Plain freshcache: its rv=0 answers may be stale by design; its
		// rv="" ones may not.
		{Config: ClusterFreshcache, Mode: ModeHA, Nodes: 50, Probe: ProbeStats{Writes: 5, Stale: map[string]int64{"get rv=0": 4, `get rv=""`: 2}}},
		{Config: ClusterUpstream, Mode: ModeHA, Nodes: 50, Probe: ProbeStats{Writes: 5, Stale: map[string]int64{`list rv=""`: 9}}},
	}
	r := ComputeClusterRatios(rows)
	if r.Nodes != 50 {
		t.Fatalf("headline at %d nodes, want 50", r.Nodes)
	}
	want := "cluster-bench ratios: apiserver-cpu=1.05 etcd-reads=0.25 list-p99=0.75 stale=3"
	if got := r.Line(); got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
	if got := ComputeClusterRatios(rows[:1]).Line(); got != "cluster-bench ratios: apiserver-cpu=n/a etcd-reads=n/a list-p99=n/a stale=n/a" {
		t.Errorf("upstream alone: %s", got)
	}
	if strings.Count(r.Line(), "\n") != 0 {
		t.Error("the closing line must be one line")
	}
	targets := clusterTargets(r)
	if targets[0][3] != "yes" || targets[1][3] != "yes" || targets[2][3] != "yes" || targets[3][3] != "no" {
		t.Errorf("targets %v", targets)
	}
}

func TestPromisedStale(t *testing.T) {
	stale := map[string]int64{"get rv=0": 1, "list rv=0": 2, `get rv=""`: 4, `list rv=""`: 8}
	if got := promisedStale(ClusterRow{Config: ClusterFreshcache, Probe: ProbeStats{Stale: stale}}); got != 12 {
		t.Errorf("freshcache: %d, want the rv=\"\" ones (12)", got)
	}
	if got := promisedStale(ClusterRow{Config: ClusterFreshRV0, Probe: ProbeStats{Stale: stale}}); got != 15 {
		t.Errorf("freshcache-fresh-rv0: %d, want all (15)", got)
	}
}
