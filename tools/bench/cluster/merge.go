package cluster

// Merging cluster reports: the cells of several runs of the same load in
// one report, e.g. a sweep and a later run of one more node count.

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// ReadReport reads a report's JSON (as WriteJSON wrote it).
func ReadReport(path string) (Report, error) {
	var r Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.Kind != "cluster" && r.Kind != "scale" {
		return r, fmt.Errorf("%s: a %q report, not a cluster or scale one", path, r.Kind)
	}
	return r, nil
}

// sameLoad is the part of the settings every merged run must share: a
// cell is only comparable with cells that ran the same load.
func sameLoad(c Config) Config {
	return Config{
		PodsPerNode: c.PodsPerNode, ReplicasPerDeployment: c.ReplicasPerDeployment, PodRate: c.PodRate,
		NodeListRate: c.NodeListRate, AllListRate: c.AllListRate, Informers: c.Informers, InformerRestart: c.InformerRestart,
		ProbeRate: c.ProbeRate, Seed: c.Seed, Warmup: c.Warmup, Window: c.Window,
		CalibWindow: c.CalibWindow, CalibRate: c.CalibRate, CalibListAllRate: c.CalibListAllRate,
		LocalUpArgs: c.LocalUpArgs,
	}
}

// NumberRepeats returns runs with the cells of runs that did not repeat
// (repeat 0) numbered by run order, after the highest repeat any run
// already gives that cell: with none, the k-th of runs that holds a cell
// makes it repeat k. It is for a repeated run split over several
// invocations of one repeat each (each started with its configurations
// in a rotated order, as one repeated run rotates them), and for adding
// one more such invocation to an earlier merge of them. The runs are not
// changed.
func NumberRepeats(runs []Report) []Report {
	type key struct {
		config, mode string
		nodes        int
	}
	seen := map[key]int{}
	for _, r := range runs {
		for _, c := range r.Cells {
			k := key{c.Config, c.Mode, c.Nodes}
			seen[k] = max(seen[k], c.Repeat)
		}
	}
	out := make([]Report, len(runs))
	for i, r := range runs {
		r.Cells = slices.Clone(r.Cells)
		for j, c := range r.Cells {
			if c.Repeat != 0 {
				continue
			}
			k := key{c.Config, c.Mode, c.Nodes}
			seen[k]++
			r.Cells[j].Repeat = seen[k]
		}
		out[i] = r
	}
	return out
}

// MergeReports puts the cells of runs of the same load into one
// report under id (the merge's own identity). A cell (configuration,
// mode, node count) measured by two runs is an error: choosing one would
// be choosing a result. Each run's identity and failures are kept in the
// notes and the error.
func MergeReports(id report.Identity, runs []Report) (Report, error) {
	if len(runs) == 0 {
		return Report{}, fmt.Errorf("no reports to merge")
	}
	settings := runs[0].Settings
	load := sameLoad(settings)
	type key struct {
		config, mode  string
		nodes, repeat int
	}
	seen := map[key]int{}
	var (
		cells   []Row
		notes   []string
		errs    []string
		configs = map[string]bool{}
		nodes   = map[int]bool{}
	)
	for i, r := range runs {
		if r.Kind != runs[0].Kind {
			return Report{}, fmt.Errorf("run %d is a %q report and run 1 a %q one", i+1, r.Kind, runs[0].Kind)
		}
		if !jsonEqual(sameLoad(r.Settings), load) {
			return Report{}, fmt.Errorf("run %d (%s) ran another load than run 1: its cells are not comparable", i+1, r.Command)
		}
		notes = append(notes, fmt.Sprintf("run %d: commit `%s`, %s, `%s`", i+1, r.GitCommit, r.Date.Format("2006-01-02 15:04 UTC"), r.Command))
		notes = append(notes, r.Notes...)
		if r.Error != "" {
			errs = append(errs, fmt.Sprintf("run %d: %s", i+1, r.Error))
		}
		for _, c := range r.Cells {
			k := key{c.Config, c.Mode, c.Nodes, c.Repeat}
			if j, ok := seen[k]; ok {
				return Report{}, fmt.Errorf("%s %s at %d nodes (repeat %d) is in run %d and run %d; merge runs of different cells", c.Config, c.Mode, c.Nodes, c.Repeat, j, i+1)
			}
			seen[k] = i + 1
			cells = append(cells, c)
			configs[c.Config] = true
			if c.Mode == modeSingle {
				nodes[c.Nodes] = true
			} else if settings.HANodes == 0 {
				settings.HANodes = c.Nodes
			}
		}
	}
	// The order a single run would have: each node count's
	// configurations, then HA.
	order := func(c Row) []int {
		mode := 0
		if c.Mode != modeSingle {
			mode = 1
		}
		return []int{mode, c.Nodes, c.Repeat, slices.Index(AllConfigs, c.Config)}
	}
	slices.SortStableFunc(cells, func(a, b Row) int { return slices.Compare(order(a), order(b)) })
	settings.Configs, settings.Nodes = nil, nil
	for _, c := range AllConfigs {
		if configs[c] {
			settings.Configs = append(settings.Configs, c)
		}
	}
	for n := range nodes {
		settings.Nodes = append(settings.Nodes, n)
	}
	slices.Sort(settings.Nodes)
	out := NewReport(settings, cells, nil)
	out.Identity = id
	out.Notes = append(notes, id.Notes...)
	out.Error = strings.Join(errs, "\n")
	return out, nil
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
