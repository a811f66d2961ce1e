package cluster

// CPU profiles of the kube-apiservers over the measured window, split by
// part (cpusplit.APIServer), and the report's table of them: when a
// target is missed, the report says where the apiservers' CPU went, not
// only how much there was.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/freshcache/freshcache/tools/bench/diag/cpusplit"
	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// profileMargin is how long past the profile's own length the harness
// waits for it: the apiserver stops the profiler and encodes the profile
// while still under the cell's load.
const profileMargin = time.Minute

// windowProfiles are the in-flight CPU profiles of a cell's apiservers,
// one request each; a nil *windowProfiles (profiling off) does nothing.
type windowProfiles struct {
	cancel  context.CancelFunc
	results []chan profileResult
}

type profileResult struct {
	b   []byte
	err error
}

// startWindowProfiles, with cfg.CPUProfile, asks every apiserver for a
// CPU profile as long as the window and returns at once, so that the
// window starts on time; called right after the window's first sample,
// the profiles cover the window. The handler takes whole seconds.
func startWindowProfiles(ctx context.Context, cfg Config, apis []*servermetrics.Client) *windowProfiles {
	if !cfg.CPUProfile {
		return nil
	}
	secs := max(1, int(cfg.Window.Round(time.Second)/time.Second))
	ctx, cancel := context.WithCancel(ctx)
	w := &windowProfiles{cancel: cancel}
	for _, a := range apis {
		ch := make(chan profileResult, 1)
		w.results = append(w.results, ch)
		go func() {
			b, err := a.Get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), "", time.Duration(secs)*time.Second+profileMargin)
			ch <- profileResult{b, err}
		}()
	}
	return w
}

// stop ends the requests still in flight (a cell that failed before
// collecting them).
func (w *windowProfiles) stop() {
	if w != nil {
		w.cancel()
	}
}

// collect waits for the profiles, writes each into dir as
// kube-apiserver-<i>.cpu.pprof (go tool pprof reads them) and stores
// their split, the apiservers summed, in r. A failed profile is a note,
// not a failed cell: the window's other figures stand without it. The
// split is stored only when every apiserver's profile was split, since a
// sum missing one apiserver would understate the cell.
func (w *windowProfiles) collect(r *Row, dir string) {
	if w == nil {
		return
	}
	parts := map[string]float64{}
	total, ok := 0.0, true
	for i, ch := range w.results {
		res := <-ch
		name := fmt.Sprintf("kube-apiserver-%d.cpu.pprof", i+1)
		p, err := writeAndParse(res, dir, name)
		var split map[string]time.Duration
		var sum time.Duration
		if err == nil {
			split, sum, err = cpusplit.APIServer.Split(p)
		}
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s%d over the window: %v", profileNote, i+1, err))
			ok = false
			continue
		}
		for k, d := range split {
			parts[k] += d.Seconds()
		}
		total += sum.Seconds()
	}
	if ok && len(w.results) > 0 {
		r.APICPUParts, r.APIProfiledSec = parts, total
	}
}

// profileNote begins a row's note on a failed profile.
const profileNote = "CPU profile of kube-apiserver-"

// writeAndParse writes a profile's bytes to dir/name, then parses them.
func writeAndParse(res profileResult, dir, name string) (*profile.Profile, error) {
	if res.err != nil {
		return nil, res.err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name), res.b, 0o644); err != nil {
		return nil, err
	}
	p, err := profile.ParseData(res.b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// writeAPICPUParts is the report's split of the apiservers' CPU: a table
// per mode and node count, a column per configuration, a line per part,
// each the median over the repeats with a profile. Rows without a split
// (profiling off, a failed profile, older runs) are left out; so is the
// section when none has one.
func writeAPICPUParts(b *strings.Builder, rows []Row) {
	type group struct {
		mode  string
		nodes int
	}
	var groups []group
	byGroup := map[group]map[string][]Row{}
	for _, r := range rows {
		if r.APICPUParts == nil {
			continue
		}
		g := group{r.Mode, r.Nodes}
		if byGroup[g] == nil {
			byGroup[g] = map[string][]Row{}
			groups = append(groups, g)
		}
		byGroup[g][r.Config] = append(byGroup[g][r.Config], r)
	}
	if len(groups) == 0 {
		return
	}
	// A single run's order: single apiserver by node count, then HA.
	rank := func(g group) []int { return []int{btoi(g.mode != modeSingle), g.nodes} }
	slices.SortStableFunc(groups, func(x, y group) int { return slices.Compare(rank(x), rank(y)) })
	b.WriteString("\n## Where the apiserver CPU goes in the steady-state window\n\n" + apiCPUPartsHow)
	for _, g := range groups {
		var configs []string
		for _, c := range AllConfigs {
			if len(byGroup[g][c]) > 0 {
				configs = append(configs, c)
			}
		}
		mode := "single apiserver"
		if g.mode == modeHA {
			mode = "HA, 2 kube-apiservers summed"
		}
		fmt.Fprintf(b, "\n%d nodes, %s: CPU seconds in the window (share of the profiled total)\n\n| part |", g.nodes, mode)
		for _, c := range configs {
			fmt.Fprintf(b, " %s (n=%d) |", c, len(byGroup[g][c]))
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(configs)) + "\n")
		median := func(c string, of func(Row) float64) float64 {
			var v []float64
			for _, r := range byGroup[g][c] {
				v = append(v, of(r))
			}
			return quantile.Median(v)
		}
		totals := make([]float64, len(configs))
		for i, c := range configs {
			totals[i] = median(c, func(r Row) float64 { return r.APIProfiledSec })
		}
		for _, part := range apiCPUPartOrder(rows) {
			fmt.Fprintf(b, "| %s |", part)
			for i, c := range configs {
				s := median(c, func(r Row) float64 { return r.APICPUParts[part] })
				share := 0.0
				if totals[i] > 0 {
					share = 100 * s / totals[i]
				}
				fmt.Fprintf(b, " %.1f (%.0f%%) |", s, share)
			}
			b.WriteString("\n")
		}
		b.WriteString("| **profiled total** |")
		for i := range configs {
			fmt.Fprintf(b, " **%.1f** |", totals[i])
		}
		b.WriteString("\n| apiserver CPU from /proc |")
		for _, c := range configs {
			fmt.Fprintf(b, " %.1f |", median(c, func(r Row) float64 { return r.APICPUSec }))
		}
		b.WriteString("\n")
	}
	var failed []string
	for _, r := range rows {
		for _, n := range r.Notes {
			if r.APICPUParts == nil && strings.HasPrefix(n, profileNote) {
				failed = append(failed, fmt.Sprintf("%s %s at %d nodes: %s", r.Config, r.modeLabel(), r.Nodes, n))
			}
		}
	}
	if len(failed) > 0 {
		b.WriteString("\nLeft out, their profile failed: " + strings.ReplaceAll(strings.Join(failed, "; "), "|", "/") + ".\n")
	}
}

// apiCPUPartOrder is the parts any row has, in cpusplit.APIServer's
// order, then parts it no longer knows (older runs), sorted.
func apiCPUPartOrder(rows []Row) []string {
	have := map[string]bool{}
	for _, r := range rows {
		for k, v := range r.APICPUParts {
			if v > 0 {
				have[k] = true
			}
		}
	}
	var out []string
	for _, p := range cpusplit.APIServer.Parts() {
		if have[p] {
			out = append(out, p)
			delete(have, p)
		}
	}
	return append(out, sortedKeys(have)...)
}

// apiCPUPartsHow is how the table is measured.
const apiCPUPartsHow = "From one CPU profile of each kube-apiserver over the measured window (Go's profiler, 100 samples a second, through `/debug/pprof/profile` for the window's length, started right after the window's first sample; the files are `kube-apiserver-<i>.cpu.pprof` in each cell's data directory, kept with `--keep-data` or `--data-dir`), the apiservers summed. A sample goes to its part by freshcache's pprof label (`freshcache`: wait; fetch, progress; reflector, fanout, driver, consistency), and without one to the first part whose functions are on its stack, in the order of the table (tools/bench/diag/cpusplit, APIServer). Upstream has no labels: its freshness wait (`waitUntilFreshLocked`) and its revision fetches and progress requests (`GetCurrentResourceVersion`, `RequestWatchProgress`) are found by function, so those lines compare across configurations. freshcache's cache goroutines keep all they run, their etcd watch and decoding included, where upstream's cacher has these under \"etcd client and storage\" and \"encode/decode\": set upstream's watch-cache line beside freshcache's cache goroutines plus its watch-cache line. GC assists count with the code that allocated. Each cell is the median over the cell's repeats with a profile (n in the header), so the lines need not add up to the total; the profiled total differs from /proc's by sampling and by the few milliseconds between the two windows' edges. The profiler's own cost falls on every configuration alike.\n"
