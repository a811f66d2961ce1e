package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/pkg/etcdlocal"
	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

// TestHarnessTinyShape runs every backend and scenario once at a tiny shape
// and checks that the harness measured what it claims: every row has ops
// and no errors, LIST by node returned exactly the node's pods on every
// backend, watchers got every event, and the outputs are well-formed. It
// never looks at how fast anything was.
func TestHarnessTinyShape(t *testing.T) {
	shape := Shape{Pods: 200, Nodes: 10}
	ctx, env := startEnvUnlessShort(t, "three pod storages", shape, 3*time.Minute)

	cfg := Config{
		Shape:       shape,
		Concurrency: []int{2},
		// Long enough that every row gets ops on a loaded machine (100 ms
		// gave a row none in a clean-clone run beside other benchmarks).
		Duration:          500 * time.Millisecond,
		Load:              Load{PodWritesPerSec: 20, LeaseWritesPerSec: 50},
		WatchNodes:        2,
		WatchWritesPerSec: 100,
		WatchSetupTimeout: 30 * time.Second,
		SweepLeaseRates:   []float64{0},
		SweepConcurrency:  2,
		GateControl:       []time.Duration{5 * time.Millisecond},
	}
	rows, err := Run(ctx, env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Every backend: the matrix and one sweep row; the caches also one
	// gate-control row.
	want := len(AllBackends)*(len(AllScenarios)*len(allRVs)+1) + len(AllBackends) - 1
	if len(rows) != want {
		t.Fatalf("got %d rows, want %d", len(rows), want)
	}
	perNode := float64(shape.Pods / shape.Nodes)
	listNode := map[string]int{}
	gated := map[string]int{}
	for _, r := range rows {
		name := r.Backend + " " + r.Scenario + " rv=" + r.RV
		if r.Ops == 0 {
			t.Errorf("%s: no ops", name)
		}
		if r.Errors != 0 {
			t.Errorf("%s: %d errors, first: %s", name, r.Errors, r.FirstError)
		}
		if r.WrongCounts != 0 {
			t.Errorf("%s: %d ops returned the wrong number of items", name, r.WrongCounts)
		}
		switch r.Scenario {
		case ScenarioListNode, ScenarioKubeletRun:
			if r.ItemsPerOp != perNode {
				t.Errorf("%s: %.2f items per LIST by node, want %.0f", name, r.ItemsPerOp, perNode)
			}
			if r.Scenario == ScenarioListNode && !r.extra() {
				listNode[r.Backend]++
			}
			if r.GateMs > 0 {
				gated[r.Backend]++
				if r.GateMs != 5 || r.RV != RVZero || r.P50Ms <= 0 {
					t.Errorf("%s: gate control row with gate %vms, rv %q, p50 %vms", name, r.GateMs, r.RV, r.P50Ms)
				}
				// Every op waited for the gate: the wait is measured, and
				// the part until the opening is no longer than the whole.
				if r.GateWaitP50Ms == nil || r.GateWaitP99Ms == nil || r.GateOpenP50Ms == nil || r.GateOpenP99Ms == nil {
					t.Errorf("%s: gate row without its wait quantiles", name)
				} else if *r.GateOpenP50Ms > *r.GateWaitP50Ms || *r.GateOpenP99Ms > *r.GateWaitP99Ms || *r.GateWaitP50Ms > *r.GateWaitP99Ms || *r.GateWaitP50Ms <= 0 {
					t.Errorf("%s: gate wait p50/p99 %v/%v ms, opened p50/p99 %v/%v ms", name, *r.GateWaitP50Ms, *r.GateWaitP99Ms, *r.GateOpenP50Ms, *r.GateOpenP99Ms)
				}
			} else if r.GateWaitP99Ms != nil {
				t.Errorf("%s: gate wait on a row without a gate", name)
			}
			if r.Backend == BackendFreshcache && r.RV == RVConsistent {
				// Every consistent read needs a fetch: some were made and
				// at most one per read; the wait was observed.
				if r.FetchesPerOp <= 0 || r.FetchesPerOp > 1 || r.FreshWaitP50Ms == nil {
					t.Errorf("%s: %.3f fetches per op, wait p50 %v", name, r.FetchesPerOp, r.FreshWaitP50Ms)
				}
			}
		case ScenarioListAll, ScenarioListPaged:
			if r.ItemsPerOp != float64(shape.Pods) {
				t.Errorf("%s: %.2f items per op, want %d", name, r.ItemsPerOp, shape.Pods)
			}
		case ScenarioWatchFan:
			if r.EventsExpected == 0 || r.EventsDelivered < r.EventsExpected {
				t.Errorf("%s: %d of %d events delivered", name, r.EventsDelivered, r.EventsExpected)
			}
			if r.Watchers != 2*2 {
				t.Errorf("%s: %d watchers, want 4", name, r.Watchers)
			}
		}
	}
	for _, b := range AllBackends {
		if listNode[b] != len(allRVs) {
			t.Errorf("backend %s: %d list-node rows, want %d", b, listNode[b], len(allRVs))
		}
		wantGated := 1 // the control needs a cache: none for etcd
		if b == BackendEtcd {
			wantGated = 0
		}
		if gated[b] != wantGated {
			t.Errorf("backend %s: %d gate-control rows, want %d", b, gated[b], wantGated)
		}
	}

	// Outputs: table, JSON round trip, markdown, PNGs.
	table := reporttest.Render(t, func(w io.Writer) error { return WriteTable(w, rows) })
	if got := strings.Count(table, "\n"); got != len(rows)+1 {
		t.Errorf("table has %d lines, want %d", got, len(rows)+1)
	}
	dir := t.TempDir()
	rep := NewReport("storage")
	full := cfg.WithDefaults()
	rep.Config, rep.Rows = &full, rows
	path := filepath.Join(dir, "tiny.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != len(rows) || back.Rows[0].Backend != rows[0].Backend {
		t.Errorf("JSON round trip: %d rows, want %d", len(back.Rows), len(rows))
	}
	var md bytes.Buffer
	WriteMarkdown(&md, back)
	if !strings.Contains(md.String(), "| backend | scenario |") {
		t.Errorf("markdown has no row table:\n%s", md.String())
	}
	pngs, err := Plot(back, dir, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if len(pngs) != 1 || filepath.Base(pngs[0]) != "tiny.png" {
		t.Errorf("wrote %v, want one figure, tiny.png", pngs)
	}
	reporttest.CheckPNGs(t, pngs)
}

func TestShapeCounts(t *testing.T) {
	s := Shape{Pods: 1003, Nodes: 10}.WithDefaults()
	total := 0
	for n := range s.Nodes {
		total += s.PodsOnNode(n)
	}
	if total != s.Pods {
		t.Errorf("PodsOnNode sums to %d, want %d", total, s.Pods)
	}
	apps := 0
	for a := range s.Apps {
		apps += s.podsOfApp(a)
	}
	if apps != s.Pods {
		t.Errorf("podsOfApp sums to %d, want %d", apps, s.Pods)
	}
}

func TestHeadlinesPairRepeatsAndTakeTheMedian(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	row := func(b, rv string, ops float64, wait *float64) Row {
		return Row{Backend: b, Scenario: ScenarioListNode, RV: rv, Concurrency: 32, OpsPerSec: ops, FreshWaitP99Ms: wait}
	}
	rows := []Row{
		row(BackendUpstream, RVConsistent, 500, nil),
		row(BackendUpstream, RVConsistent, 1000, nil),
		row(BackendUpstream, RVConsistent, 400, nil),
		// A gate-control row never counts.
		{Backend: BackendFreshcache, Scenario: ScenarioListNode, RV: RVZero, Concurrency: 32, OpsPerSec: 1, GateMs: 1},
		row(BackendFreshcache, RVConsistent, 7000, ms(20)),
		row(BackendFreshcache, RVZero, 10000, nil),
		row(BackendFreshcache, RVConsistent, 9000, ms(8)),
		row(BackendFreshcache, RVZero, 10000, nil),
		row(BackendFreshcache, RVConsistent, 8500, ms(9)),
		row(BackendFreshcache, RVZero, 10000, nil),
		// Lower concurrency is not the target's.
		{Backend: BackendFreshcache, Scenario: ScenarioListNode, RV: RVZero, Concurrency: 4, OpsPerSec: 1},
	}
	got := map[string]headline{}
	for _, h := range headlines(rows) {
		got[h.Name] = h
	}
	for _, tc := range []struct {
		name   string
		value  float64
		met    bool
		atMost bool
	}{
		// pairs 0.70, 0.90, 0.85: median 0.85
		{`freshcache list-node rv="" / freshcache rv=0`, 0.85, true, false},
		// pairs 14, 9, 21.25: median 14
		{`freshcache list-node rv="" / upstream rv=""`, 14, true, false},
		// waits 20, 8, 9: median 9
		{`freshcache list-node rv="" freshness wait p99 (ms)`, 9, true, true},
	} {
		h, ok := got[tc.name]
		if !ok {
			t.Errorf("%s: missing; got %v", tc.name, got)
			continue
		}
		if d := h.Ratio - tc.value; d > 1e-9 || d < -1e-9 || h.Met != tc.met || h.AtMost != tc.atMost {
			t.Errorf("%s = %+v; want value %v met %v atMost %v", tc.name, h, tc.value, tc.met, tc.atMost)
		}
	}
	if _, ok := got[`freshcache GET rv="" / etcd GET`]; ok {
		t.Error("a target without its rows must be left out")
	}
	// A failing ceiling is reported as not met.
	hs := headlines([]Row{row(BackendFreshcache, RVConsistent, 1, ms(25))})
	if len(hs) != 1 || hs[0].Met || !strings.Contains(hs[0].Detail, "25.00") {
		t.Errorf("wait 25 ms against a 10 ms ceiling: %+v", hs)
	}
}

// TestHarnessAttachedEtcd runs freshcache's consistent and rv=0 LIST by
// node against an etcd the harness did not start (storage --etcd-endpoint;
// here an in-process one stands for the separate process).
func TestHarnessAttachedEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd and a pod storage")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := etcdlocal.Start(ctx, etcdlocal.Options{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	shape := Shape{Pods: 100, Nodes: 5}
	env, err := AttachEnv(ctx, cluster.Endpoints()[0], shape)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	rows, err := Run(ctx, env, Config{
		Shape:       shape,
		Backends:    []string{BackendFreshcache},
		Scenarios:   []string{ScenarioListNode},
		RVs:         []string{RVConsistent, RVZero},
		Concurrency: []int{2},
		// Long enough that a row on a busy machine (CI beside other
		// processes) completes consistent reads; a progress request etcd
		// ignores (a watcher on the stream not yet synced) is retried
		// after the 100 ms stall.
		Duration: time.Second,
		Load:     Load{LeaseWritesPerSec: 50},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if r.Ops == 0 || r.Errors != 0 || r.WrongCounts != 0 || r.ItemsPerOp != 20 {
			t.Errorf("rv=%s: %d ops, %d errors (%s), %d wrong counts, %.2f items per op", r.RV, r.Ops, r.Errors, r.FirstError, r.WrongCounts, r.ItemsPerOp)
		}
	}
	if rows[0].FetchesPerOp <= 0 {
		t.Errorf("consistent row made no revision fetch: %+v", rows[0])
	}
	// The in-process oracle client needs the embedded server.
	if _, err := Run(ctx, env, Config{Shape: shape, Backends: []string{BackendFreshcache}, OracleClient: OracleInProcess}); err == nil || !strings.Contains(err.Error(), "embedded") {
		t.Errorf("in-process oracle client on an attached etcd: err %v", err)
	}
	// The consistent row's wait until release is part of its wait; the rv=0
	// row (FreshResourceVersionZero off) never waits.
	c, z := rows[0], rows[1]
	if c.FreshReleaseP99Ms == nil || c.FreshWaitP99Ms == nil || *c.FreshReleaseP99Ms > *c.FreshWaitP99Ms {
		t.Errorf("consistent row: release p99 %v, wait p99 %v", ptrStr(c.FreshReleaseP99Ms), ptrStr(c.FreshWaitP99Ms))
	}
	if z.FreshReleaseP99Ms != nil {
		t.Errorf("rv=0 row has a release p99 of %v ms", *z.FreshReleaseP99Ms)
	}
}

func ptrStr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// startEnvUnlessShort skips t under -short, saying that it starts an
// embedded etcd and what else (starts), and otherwise is startTestEnv.
func startEnvUnlessShort(t *testing.T, starts string, shape Shape, within time.Duration) (context.Context, *Env) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded etcd and " + starts)
	}
	return startTestEnv(t, shape, within)
}

// startTestEnv starts an embedded etcd loaded with shape, and a context that
// ends after within; the test's cleanup closes both.
func startTestEnv(tb testing.TB, shape Shape, within time.Duration) (context.Context, *Env) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	tb.Cleanup(cancel)
	env, err := StartEnv(ctx, tb.TempDir(), shape)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(env.Close)
	return ctx, env
}

// TestGateReportsItsOpening checks the gate control's split of a wait:
// the time a waiter gets back is the opening it waited for, after it
// started waiting and before it ran again; a cancelled wait reports none.
func TestGateReportsItsOpening(t *testing.T) {
	g := startGate(2 * time.Millisecond)
	defer g.close()
	var r LoopResult
	for range 20 {
		t0 := time.Now()
		opened := g.wait(context.Background())
		running := time.Now()
		if opened.Before(t0) || opened.After(running) {
			t.Fatalf("gate opened at %v, outside the wait %v..%v", opened, t0, running)
		}
		r.gateWait(t0, opened, running)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stuck := startGate(time.Hour)
	defer stuck.close()
	if at := stuck.wait(ctx); !at.IsZero() {
		t.Errorf("cancelled wait reported an opening at %v", at)
	}

	var row Row
	row.fillGate(r.gateOpen, r.gateRun)
	if row.GateWaitP99Ms == nil || row.GateOpenP99Ms == nil {
		t.Fatal("no gate quantiles from 20 waits")
	}
	if *row.GateOpenP50Ms > *row.GateWaitP50Ms || *row.GateOpenP99Ms > *row.GateWaitP99Ms {
		t.Errorf("opened p50/p99 %v/%v ms beyond the wait's %v/%v ms", *row.GateOpenP50Ms, *row.GateOpenP99Ms, *row.GateWaitP50Ms, *row.GateWaitP99Ms)
	}
	var empty Row
	empty.fillGate(nil, nil)
	if empty.GateWaitP99Ms != nil {
		t.Error("gate quantiles from no waits")
	}
}

func TestFillGateQuantiles(t *testing.T) {
	ms := time.Millisecond
	open := []time.Duration{1 * ms, 2 * ms, 3 * ms, 4 * ms}
	run := []time.Duration{4 * ms, 0, 1 * ms, 10 * ms}
	var r Row
	r.fillGate(open, run)
	// totals 5, 2, 4, 14 ms; nearest rank: p50 = 2nd of 4 sorted, p99 = 4th.
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"wait p50", r.GateWaitP50Ms, 4},
		{"wait p99", r.GateWaitP99Ms, 14},
		{"opened p50", r.GateOpenP50Ms, 2},
		{"opened p99", r.GateOpenP99Ms, 4},
	} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s = %v, want %v ms", c.name, c.got, c.want)
		}
	}
}

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
