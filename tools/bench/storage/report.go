package storage

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/freshcache/freshcache/tools/bench/diag/cpusplit"
	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// Report is the JSON document a storage or memory run writes to
// docs/results/ (Kind "storage" or "memory").
type Report struct {
	report.Identity

	Config *Config     `json:"config,omitempty"`
	Rows   []Row       `json:"rows,omitempty"`
	Memory []MemoryRow `json:"memory,omitempty"`
}

// NewReport fills the run's identity: date, machine, commit and command.
func NewReport(kind string) Report { return Report{Identity: report.NewIdentity(kind)} }

// WriteJSON writes r, indented, to path.
func (r Report) WriteJSON(path string) error { return report.WriteJSON(path, r) }

// ReadReport reads a JSON report.
func ReadReport(path string) (Report, error) {
	var r Report
	err := report.ReadJSON(path, &r)
	return r, err
}

var rowHeader = []string{"backend", "scenario", "rv", "conc", "ops/s", "p50 ms", "p99 ms", "cpu ms/op", "allocs/op", "etcd req/op", "wait p50 ms", "wait p99 ms", "items/op", "notes"}

func rowCells(r Row) []string {
	wait, wait50 := "", ""
	if r.FreshWaitP99Ms != nil {
		wait = fmt.Sprintf("%.2f", *r.FreshWaitP99Ms)
	}
	if r.FreshWaitP50Ms != nil {
		wait50 = fmt.Sprintf("%.2f", *r.FreshWaitP50Ms)
	}
	if r.GateWaitP50Ms != nil && r.GateWaitP99Ms != nil {
		wait50, wait = fmt.Sprintf("%.2f", *r.GateWaitP50Ms), fmt.Sprintf("%.2f", *r.GateWaitP99Ms)
	}
	var notes []string
	if r.Sweep {
		notes = append(notes, fmt.Sprintf("sweep: %g lease writes/s", r.Load.LeaseWritesPerSec))
	}
	if r.FreshReleaseP50Ms != nil && r.FreshReleaseP99Ms != nil {
		notes = append(notes, fmt.Sprintf("released p50/p99 %.2f/%.2f ms", *r.FreshReleaseP50Ms, *r.FreshReleaseP99Ms))
	}
	if r.FetchP50Ms != nil && r.FetchP99Ms != nil {
		notes = append(notes, fmt.Sprintf("fetch p50/p99 %.2f/%.2f ms", *r.FetchP50Ms, *r.FetchP99Ms))
	}
	if r.OracleClient == OracleInProcess {
		notes = append(notes, "oracle client in-process (no gRPC; its fetches are not in etcd req/op)")
	}
	if r.FetchesPerOp > 0 || r.ProgressPerOp > 0 {
		notes = append(notes, fmt.Sprintf("fetches/op %.3f, progress/op %.3f", r.FetchesPerOp, r.ProgressPerOp))
	}
	if r.GateMs > 0 {
		notes = append(notes, fmt.Sprintf("control: each op waits for a gate opening every %gms", r.GateMs))
		if r.GateOpenP50Ms != nil && r.GateOpenP99Ms != nil {
			notes = append(notes, fmt.Sprintf("wait = for the gate, exact; opened p50/p99 %.2f/%.2f ms", *r.GateOpenP50Ms, *r.GateOpenP99Ms))
		}
	}
	if r.Watchers > 0 {
		notes = append(notes, fmt.Sprintf("%d watchers, %d/%d events, setup %.1fs", r.Watchers, r.EventsDelivered, r.EventsExpected, r.SetupSeconds))
	}
	if r.Trace != "" {
		notes = append(notes, "traced (slower): "+filepath.Base(r.Trace))
	}
	if r.CPUProfile != "" {
		notes = append(notes, "CPU profile: "+filepath.Base(r.CPUProfile))
	}
	notes = append(notes, report.FailureNotes(r.WrongCounts, r.Errors, r.FirstError)...)
	return []string{
		r.Backend, r.Scenario, r.RV, fmt.Sprint(r.Concurrency),
		report.Num(r.OpsPerSec), fmt.Sprintf("%.2f", r.P50Ms), fmt.Sprintf("%.2f", r.P99Ms),
		fmt.Sprintf("%.3f", r.CPUPerOpMs), report.Num(r.AllocsPerOp), fmt.Sprintf("%.2f", r.EtcdPerOp),
		wait50, wait, report.Num(r.ItemsPerOp), strings.Join(notes, "; "),
	}
}

// formatRow is one row as a single progress line.
func formatRow(r Row) string {
	c := rowCells(r)
	var b strings.Builder
	for i, h := range rowHeader {
		if c[i] == "" {
			continue
		}
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "%s=%s", strings.ReplaceAll(h, " ", ""), c[i])
	}
	return b.String()
}

// WriteTable prints rows as an aligned table.
func WriteTable(w io.Writer, rows []Row) error {
	return report.WriteAligned(w, rowHeader, report.Cells(rows, rowCells))
}

// writeRowsMarkdown prints rows as a GitHub markdown table.
func writeRowsMarkdown(w io.Writer, rows []Row) {
	report.WriteMarkdownTable(w, rowHeader, report.Cells(rows, rowCells), 3)
}

// headline is one of the storage-level targets (the consistent-read
// targets and the rv=0 parity rows), computed from one run.
type headline struct {
	Name string `json:"name"`
	// Ratio is the measured value: a throughput ratio, or a latency in ms
	// for an AtMost target.
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	// AtMost marks a ceiling (Ratio <= Target is met); otherwise a floor.
	AtMost bool   `json:"at_most,omitempty"`
	Met    bool   `json:"met"`
	Detail string `json:"detail"`
}

// headlines computes the storage-level targets at the highest concurrency
// in rows. A target whose rows are missing is left out. When a run
// repeats rv modes (e.g. --rvs=consistent,0,consistent,0), the i-th row of
// one side is paired with the i-th row of the other, and the median over
// the pairs is the value (the detail lists every pair): rows at 32 clients
// on 2 cores move by ±20% from one run to the next.
func headlines(rows []Row) []headline {
	_, _, _, concs := dims(rows)
	if len(concs) == 0 {
		return nil
	}
	top := concs[len(concs)-1]
	get := func(b, sc, rv string) []Row {
		var out []Row
		for _, x := range rows {
			if !x.extra() && x.Backend == b && x.Scenario == sc && x.RV == rv && x.Concurrency == top {
				out = append(out, x)
			}
		}
		return out
	}
	var out []headline
	ratio := func(name string, target float64, as, bs []Row) {
		n := min(len(as), len(bs))
		var rs []float64
		var parts []string
		for i := range n {
			a, b := as[i], bs[i]
			if b.OpsPerSec == 0 {
				return
			}
			rs = append(rs, a.OpsPerSec/b.OpsPerSec)
			parts = append(parts, fmt.Sprintf("%s %s %s %.1f ops/s vs %s %s %s %.1f ops/s",
				a.Backend, a.Scenario, rvLabel(a.RV), a.OpsPerSec, b.Backend, b.Scenario, rvLabel(b.RV), b.OpsPerSec))
		}
		if n == 0 {
			return
		}
		m := quantile.Median(rs)
		detail := strings.Join(parts, "; ") + fmt.Sprintf(" (c=%d)", top)
		if n > 1 {
			detail = fmt.Sprintf("median of %d pairs %s: %s", n, fmtList(rs, "%.2f"), detail)
		}
		out = append(out, headline{Name: name, Ratio: m, Target: target, Met: m >= target, Detail: detail})
	}
	waitP99 := func(name string, ceiling float64, rs []Row) {
		var ws []float64
		for _, r := range rs {
			if r.FreshWaitP99Ms != nil {
				ws = append(ws, *r.FreshWaitP99Ms)
			}
		}
		if len(ws) == 0 {
			return
		}
		m := quantile.Median(ws)
		detail := fmt.Sprintf("freshness wait p99 %s ms over %d row(s) (c=%d)", fmtList(ws, "%.2f"), len(ws), top)
		out = append(out, headline{Name: name, Ratio: m, Target: ceiling, AtMost: true, Met: m <= ceiling, Detail: detail})
	}
	fcC := get(BackendFreshcache, ScenarioListNode, RVConsistent)
	ratio(`freshcache list-node rv="" / freshcache rv=0`, 0.8, fcC, get(BackendFreshcache, ScenarioListNode, RVZero))
	ratio(`freshcache list-node rv="" / upstream rv=""`, 10, fcC, get(BackendUpstream, ScenarioListNode, RVConsistent))
	fcG := get(BackendFreshcache, ScenarioGet, RVConsistent)
	ratio(`freshcache GET rv="" / etcd GET`, 3, fcG, get(BackendEtcd, ScenarioGet, RVConsistent))
	waitP99(`freshcache list-node rv="" freshness wait p99 (ms)`, 10, fcC)
	waitP99(`freshcache GET rv="" freshness wait p99 (ms)`, 10, fcG)
	for _, sc := range []string{ScenarioListNode, ScenarioListAll, ScenarioListLabel, ScenarioWatchFan} {
		ratio(fmt.Sprintf("freshcache %s rv=0 / upstream rv=0", sc), 1, get(BackendFreshcache, sc, RVZero), get(BackendUpstream, sc, RVZero))
	}
	return out
}

func fmtList(v []float64, format string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

// WriteMarkdown writes the report as markdown: its identity, the targets
// computed from its rows, the rows, their CPU split and the heap table.
func WriteMarkdown(w io.Writer, r Report) {
	r.WriteHeading(w)
	if c := r.Config; c != nil {
		fmt.Fprintf(w, "- shape: %d pods on %d nodes in %d namespaces; %v per row after %v warm-up; background load %g pod writes/s and %g lease writes/s; fan-out: %d watched nodes, %g pod writes/s on them\n",
			c.Shape.Pods, c.Shape.Nodes, c.Shape.Namespaces, c.Duration, c.Warmup, c.Load.PodWritesPerSec, c.Load.LeaseWritesPerSec, c.WatchNodes, c.WatchWritesPerSec)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- note: %s\n", n)
	}
	if hs := headlines(r.Rows); len(hs) > 0 {
		fmt.Fprintf(w, "\n## Targets (same-run ratios; medians over repeated pairs)\n\n| target | value | wanted | met | rows |\n|---|---:|---:|---|---|\n")
		for _, h := range hs {
			met := "no"
			if h.Met {
				met = "yes"
			}
			op := "≥"
			if h.AtMost {
				op = "≤"
			}
			fmt.Fprintf(w, "| %s | %.2f | %s %g | %s | %s |\n", h.Name, h.Ratio, op, h.Target, met, h.Detail)
		}
	}
	if len(r.Rows) > 0 {
		fmt.Fprintf(w, "\n## Rows\n\n")
		writeRowsMarkdown(w, r.Rows)
	}
	writeCPUSplit(w, r.Rows)
	if len(r.Memory) > 0 {
		fmt.Fprintf(w, "\n## Heap per cached object\n\n| backend | pods | nodes | heap added MiB | bytes/object | ready s |\n|---|---:|---:|---:|---:|---:|\n")
		for _, m := range r.Memory {
			fmt.Fprintf(w, "| %s | %d | %d | %.1f | %.0f | %.1f |\n", m.Backend, m.Pods, m.Nodes,
				float64(m.HeapAfter-min(m.HeapAfter, m.HeapBefore))/(1<<20), m.BytesPerObject, m.ReadySeconds)
		}
	}
}

// writeCPUSplit writes, for the rows with a CPU profile, their CPU per op
// split by part (package cpusplit): one line per row, one column per part.
func writeCPUSplit(w io.Writer, rows []Row) {
	split := slices.DeleteFunc(slices.Clone(rows), func(r Row) bool { return len(r.CPUSplitUsPerOp) == 0 })
	if len(split) == 0 {
		return
	}
	parts := cpusplit.Parts()
	fmt.Fprintf(w, "\n## CPU per op by part (µs)\n\n")
	fmt.Fprintf(w, "Each part's share of the row's CPU profile (measured part only) times the row's cpu ms/op; package cpusplit defines the parts:")
	for _, p := range parts {
		fmt.Fprintf(w, " **%s** = %s;", cpusplit.Column(p), p)
	}
	fmt.Fprintf(w, " \"etcd server\" is the embedded member's work, its gRPC server side included: with etcd on its own machines it would leave these cores.\n\n| row |")
	for _, p := range parts {
		fmt.Fprintf(w, " %s |", cpusplit.Column(p))
	}
	fmt.Fprintf(w, " total |\n|---|%s\n", strings.Repeat("---:|", len(parts)+1))
	for _, r := range split {
		fmt.Fprintf(w, "| %s %s rv=%s c=%d |", r.Backend, r.Scenario, r.RV, r.Concurrency)
		for _, p := range parts {
			fmt.Fprintf(w, " %.1f |", r.CPUSplitUsPerOp[p])
		}
		fmt.Fprintf(w, " %.1f |\n", r.CPUPerOpMs*1000)
	}
}
