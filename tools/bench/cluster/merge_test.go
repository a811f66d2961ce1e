package cluster

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/report"
)

func TestMergeClusterReports(t *testing.T) {
	load := Config{Configs: AllConfigs, PodsPerNode: 30, ReplicasPerDeployment: 30, PodRate: 5, Window: 2 * time.Minute, Seed: 1}
	run := func(commit, errText string, nodes []int, ha int, cells ...Row) Report {
		s := load
		s.Nodes, s.HANodes = nodes, ha
		return Report{Identity: report.Identity{Kind: "cluster", GitCommit: commit, Command: "freshcache-bench cluster " + commit}, Settings: s, Cells: cells, Error: errText}
	}
	row := func(config, mode string, nodes int) Row {
		return Row{Config: config, Mode: mode, Nodes: nodes, Pods: 30 * nodes}
	}
	sweep := run("aaa", "bench: upstream single at 100 nodes: connection refused", []int{10, 100}, 30,
		row(Upstream, modeSingle, 10), row(FreshRV0, modeSingle, 10), row(FreshRV0, modeSingle, 100), row(Upstream, modeHA, 30))
	more := run("bbb", "", []int{75}, 0, row(FreshRV0, modeSingle, 75), row(Upstream, modeSingle, 75))

	got, err := MergeReports(report.Identity{Kind: "cluster", Command: "merge", Notes: []string{"mine"}}, []Report{sweep, more})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range got.Cells {
		order = append(order, fmt.Sprintf("%s/%s/%d", c.Config, c.Mode, c.Nodes))
	}
	want := []string{"upstream/single/10", "freshcache-fresh-rv0/single/10", "upstream/single/75", "freshcache-fresh-rv0/single/75", "freshcache-fresh-rv0/single/100", "upstream/ha/30"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("cells %v, want %v", order, want)
	}
	if !reflect.DeepEqual(got.Settings.Nodes, []int{10, 75, 100}) || got.Settings.HANodes != 30 || !reflect.DeepEqual(got.Settings.Configs, []string{Upstream, FreshRV0}) {
		t.Errorf("settings %+v", got.Settings)
	}
	if got.Command != "merge" || len(got.Notes) != 3 || !strings.Contains(got.Notes[0], "`aaa`") || !strings.Contains(got.Notes[1], "`bbb`") || got.Notes[2] != "mine" {
		t.Errorf("identity %q, notes %q", got.Command, got.Notes)
	}
	if got.Error != "run 1: bench: upstream single at 100 nodes: connection refused" {
		t.Errorf("error %q", got.Error)
	}
	// The ratios come from the merged cells: 75 is the largest N both ran.
	if r := ComputeRatios(got.Cells); r.Nodes != 75 {
		t.Errorf("ratios at %d nodes, want 75", r.Nodes)
	}
	if len(got.Models) == 0 {
		t.Error("the cost models are rebuilt from the merged cells")
	}

	for name, runs := range map[string][]Report{
		"a cell in two runs": {sweep, run("ccc", "", []int{10}, 0, row(Upstream, modeSingle, 10))},
		"a repeat in two runs": {
			run("ddd", "", []int{75}, 0, func() Row { r := row(Upstream, modeSingle, 75); r.Repeat = 2; return r }()),
			run("eee", "", []int{75}, 0, func() Row { r := row(Upstream, modeSingle, 75); r.Repeat = 2; return r }()),
		},
		"another load": {sweep, func() Report { r := more; r.Settings.PodRate = 10; return r }()},
		"nothing":      nil,
	} {
		if _, err := MergeReports(report.Identity{}, runs); err == nil {
			t.Errorf("%s: merged without an error", name)
		}
	}
}

// TestMergeClusterRepeats: runs that measured different repeats of the
// same cell merge, in repeat order within each node count.
func TestMergeClusterRepeats(t *testing.T) {
	load := Config{Configs: AllConfigs, PodsPerNode: 30, Window: time.Minute, Seed: 1}
	rep := func(config string, repeat int) Row {
		return Row{Config: config, Mode: modeSingle, Nodes: 75, Repeat: repeat}
	}
	a := Report{Identity: report.Identity{Kind: "cluster"}, Settings: load, Cells: []Row{rep(FreshRV0, 2), rep(Upstream, 2)}}
	b := Report{Identity: report.Identity{Kind: "cluster"}, Settings: load, Cells: []Row{rep(Upstream, 1), rep(FreshRV0, 1)}}
	got, err := MergeReports(report.Identity{Kind: "cluster"}, []Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range got.Cells {
		order = append(order, fmt.Sprintf("%s#%d", c.Config, c.Repeat))
	}
	want := []string{"upstream#1", "freshcache-fresh-rv0#1", "upstream#2", "freshcache-fresh-rv0#2"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("cells %v, want %v", order, want)
	}
	if r := ComputeRatios(got.Cells); r.Pairs != 2 {
		t.Errorf("%d pairs, want 2", r.Pairs)
	}
}

// TestNumberRepeats: three runs of one repeat each, the configurations
// rotated, merge as three repeats once numbered; unnumbered they are the
// same cells three times and do not merge.
func TestNumberRepeats(t *testing.T) {
	load := Config{Configs: AllConfigs, PodsPerNode: 30, Window: time.Minute, Seed: 1}
	run := func(configs ...string) Report {
		r := Report{Identity: report.Identity{Kind: "scale"}, Settings: load}
		for _, c := range configs {
			r.Cells = append(r.Cells, Row{Config: c, Mode: modeSingle, Nodes: 1000})
		}
		return r
	}
	runs := []Report{run(Upstream, FreshRV0), run(FreshRV0, Upstream), run(Upstream, FreshRV0)}
	if _, err := MergeReports(report.Identity{Kind: "scale"}, runs); err == nil {
		t.Fatal("unnumbered runs of the same cells merged")
	}
	got, err := MergeReports(report.Identity{Kind: "scale"}, NumberRepeats(runs))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range got.Cells {
		order = append(order, fmt.Sprintf("%s#%d", c.Config, c.Repeat))
	}
	want := []string{"upstream#1", "freshcache-fresh-rv0#1", "upstream#2", "freshcache-fresh-rv0#2", "upstream#3", "freshcache-fresh-rv0#3"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("cells %v, want %v", order, want)
	}
	if r := ComputeRatios(got.Cells); r.Pairs != 3 {
		t.Errorf("%d pairs, want 3", r.Pairs)
	}
	if runs[0].Cells[0].Repeat != 0 {
		t.Error("NumberRepeats changed its input")
	}
	// A merge of two such runs keeps its numbers, and one more
	// unrepeated run, in a later session, becomes repeat 3.
	earlier, err := MergeReports(report.Identity{Kind: "scale"}, NumberRepeats(runs[:2]))
	if err != nil {
		t.Fatal(err)
	}
	more, err := MergeReports(report.Identity{Kind: "scale"}, NumberRepeats([]Report{earlier, runs[2]}))
	if err != nil {
		t.Fatalf("adding a third run to a merge of two: %v", err)
	}
	if !reflect.DeepEqual(more.Cells, got.Cells) {
		t.Errorf("two merges give %+v, one gives %+v", more.Cells, got.Cells)
	}
	// Numbered cells that collide are still refused.
	repeated := run(Upstream)
	repeated.Cells[0].Repeat = 1
	if _, err := MergeReports(report.Identity{Kind: "scale"}, NumberRepeats([]Report{repeated, repeated})); err == nil {
		t.Error("two numbered repeats 1 merged")
	}
}

func TestReadClusterReportRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	r := Report{Identity: report.Identity{Kind: "cluster", GitCommit: "abc"}, Cells: []Row{{Config: Upstream, Mode: modeSingle, Nodes: 3}}}
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil || back.GitCommit != "abc" || len(back.Cells) != 1 || back.Cells[0].Nodes != 3 {
		t.Fatalf("read back %+v, %v", back, err)
	}
	other := filepath.Join(t.TempDir(), "s.json")
	if err := report.WriteJSON(other, Report{Identity: report.Identity{Kind: "storage"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(other); err == nil {
		t.Error("a storage report read as a cluster one")
	}
	// A scale report is a cluster report on kwok nodes: it is read, and
	// merged only with scale reports.
	scale := filepath.Join(t.TempDir(), "k.json")
	if err := (Report{Identity: report.Identity{Kind: "scale"}, Cells: []Row{{Config: Upstream, Mode: modeSingle, Nodes: 1000}}}).WriteJSON(scale); err != nil {
		t.Fatal(err)
	}
	s, err := ReadReport(scale)
	if err != nil || s.Kind != "scale" {
		t.Fatalf("scale report read back %+v, %v", s, err)
	}
	if _, err := MergeReports(report.Identity{Kind: "scale"}, []Report{s, back}); err == nil || !strings.Contains(err.Error(), "scale") {
		t.Errorf("a scale and a cluster report merged: %v", err)
	}
}
