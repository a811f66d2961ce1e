package storage

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/diag/cpusplit"
	"github.com/freshcache/freshcache/tools/bench/report"
	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

// TestRunProfilesEachRow checks Config.CPUProfileDir: every measured row
// gets its own CPU profile, named after the row, and its CPU per op split
// by part, the parts adding up to the row's cpu ms/op; the report prints
// the split.
func TestRunProfilesEachRow(t *testing.T) {
	shape := Shape{Pods: 400, Nodes: 4}
	ctx, env := startEnvUnlessShort(t, "a pod storage", shape, 2*time.Minute)
	dir := t.TempDir()
	want := []string{"freshcache-list-node-consistent-c4-1.pprof", "freshcache-list-node-0-c4-1.pprof"}
	rows := runListNodeRows(ctx, t, env, shape, []string{RVConsistent, RVZero}, 4, func(c *Config) { c.CPUProfileDir = dir }, want)
	for i, r := range rows {
		if filepath.Base(r.CPUProfile) != want[i] || filepath.Dir(r.CPUProfile) != dir {
			t.Errorf("row %d profiled to %q, want %s in %s", i, r.CPUProfile, want[i], dir)
		}
		// A second of LISTs by four clients leaves samples in the profile.
		if len(r.CPUSplitUsPerOp) == 0 {
			t.Errorf("%s: no CPU split", want[i])
			continue
		}
		sum := 0.0
		for _, v := range r.CPUSplitUsPerOp {
			sum += v
		}
		if total := r.CPUPerOpMs * 1000; math.Abs(sum-total) > 1e-6*total {
			t.Errorf("%s: parts add up to %.3f µs/op, the row measured %.3f", want[i], sum, total)
		}
		if r.CPUSplitUsPerOp[cpusplit.Op] <= 0 {
			t.Errorf("%s: no CPU in the op itself: %v", want[i], r.CPUSplitUsPerOp)
		}
		if r.RV == RVZero && r.CPUSplitUsPerOp[cpusplit.Wait] != 0 {
			t.Errorf("%s: an rv=0 LIST (FreshResourceVersionZero off) spent %.2f µs/op in a freshness wait", want[i], r.CPUSplitUsPerOp[cpusplit.Wait])
		}
	}
	var md bytes.Buffer
	WriteMarkdown(&md, Report{Identity: report.Identity{Kind: "storage"}, Rows: rows})
	reporttest.CheckContains(t, "report", md.String(), "## CPU per op by part (µs)", "**op** = "+cpusplit.Op, "| freshcache list-node rv=0 c=4 |", "CPU profile: "+want[0])
}

// TestRowWithoutProfileHasNoSplit: the split needs a profile and ops.
func TestRowWithoutProfileHasNoSplit(t *testing.T) {
	for _, r := range []Row{{Ops: 10, CPUPerOpMs: 1}, {CPUProfile: "/nonexistent.pprof"}} {
		if err := r.fillCPUSplit(); err != nil || r.CPUSplitUsPerOp != nil {
			t.Errorf("fillCPUSplit(%+v) = %v, split %v; want nothing", r, err, r.CPUSplitUsPerOp)
		}
	}
	r := Row{Ops: 10, CPUPerOpMs: 1, CPUProfile: filepath.Join(t.TempDir(), "missing.pprof")}
	if err := r.fillCPUSplit(); err == nil {
		t.Error("fillCPUSplit with a missing profile: no error")
	}
}

// TestRowProfileRefusedLeavesNoFile: when the process already runs a CPU
// profile (storage --cpuprofile), a row's profile fails with an error and
// leaves neither a file nor a path behind.
func TestRowProfileRefusedLeavesNoFile(t *testing.T) {
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Skipf("a CPU profile is already running: %v", err)
	}
	defer pprof.StopCPUProfile()
	dir := t.TempDir()
	row := Row{Backend: BackendFreshcache, Scenario: ScenarioGet, RV: RVZero, Concurrency: 1}
	if _, err := startRowCPUProfile(dir, &row); err == nil || !strings.Contains(err.Error(), "start pprof") {
		t.Fatalf("second CPU profile: error %v, want one from starting it", err)
	}
	if row.CPUProfile != "" {
		t.Errorf("row.CPUProfile = %q after a failed start", row.CPUProfile)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left behind: %v", left)
	}
}
