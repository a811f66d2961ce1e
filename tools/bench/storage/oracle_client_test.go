package storage

import (
	"strings"
	"testing"
	"time"
)

// TestHarnessInProcessOracle runs freshcache's consistent reads with the
// oracle on etcd's in-process client: the reads are served through the
// oracle (fetches counted, waits observed), the rows say which client
// they used, and the other backends are left alone. An unknown client is
// refused.
func TestHarnessInProcessOracle(t *testing.T) {
	shape := Shape{Pods: 100, Nodes: 5}
	ctx, env := startEnvUnlessShort(t, "two pod storages", shape, 2*time.Minute)
	rows, err := Run(ctx, env, Config{
		Shape:        shape,
		Backends:     []string{BackendUpstream, BackendFreshcache},
		Scenarios:    []string{ScenarioListNode, ScenarioGet},
		RVs:          []string{RVConsistent},
		Concurrency:  []int{2},
		Duration:     100 * time.Millisecond,
		Load:         Load{LeaseWritesPerSec: 50},
		OracleClient: OracleInProcess,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4", len(rows))
	}
	for _, r := range rows {
		name := r.Backend + " " + r.Scenario
		if r.Ops == 0 || r.Errors != 0 || r.WrongCounts != 0 {
			t.Errorf("%s: %d ops, %d errors (%s), %d wrong counts", name, r.Ops, r.Errors, r.FirstError, r.WrongCounts)
		}
		switch r.Backend {
		case BackendFreshcache:
			if r.OracleClient != OracleInProcess || r.FetchesPerOp <= 0 || r.FetchesPerOp > 1 || r.FreshWaitP50Ms == nil {
				t.Errorf("%s: oracle client %q, %.3f fetches per op, wait p50 %v", name, r.OracleClient, r.FetchesPerOp, r.FreshWaitP50Ms)
			}
			if !strings.Contains(strings.Join(rowCells(r), " "), "oracle client in-process") {
				t.Errorf("%s: the row's notes do not say which oracle client it used", name)
			}
		default:
			if r.OracleClient != "" {
				t.Errorf("%s: oracle client %q on a backend without an oracle", name, r.OracleClient)
			}
		}
	}

	if _, err := Run(ctx, env, Config{Shape: shape, Backends: []string{BackendFreshcache}, OracleClient: "carrier-pigeon"}); err == nil || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Errorf("unknown oracle client: err %v", err)
	}
}
