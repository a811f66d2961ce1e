package figures

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseTables(t *testing.T) {
	text := "# Top\n\n| a | b |\n|---|---:|\n| **x** | `1` |\n| y \\| z | 2 |\n\n## Next\n\ntext\n\n| c |\n|:-:|\n| 3 |\n"
	tables := parseTables(text)
	if len(tables) != 2 {
		t.Fatalf("%d tables, want 2", len(tables))
	}
	if got := tables[0]; got.Heading != "Top" || !slices.Equal(got.Header, []string{"a", "b"}) ||
		!slices.Equal(got.Rows[0], []string{"x", "1"}) || !slices.Equal(got.Rows[1], []string{"y | z", "2"}) {
		t.Errorf("first table %+v", got)
	}
	if got := tables[1]; got.Heading != "Next" || got.col("c") != 0 || got.col("d") != -1 || len(got.rowsWhere("3")) != 1 {
		t.Errorf("second table %+v", got)
	}
}

func TestViolations(t *testing.T) {
	for _, tc := range []struct{ cell, want string }{
		{"time-travel 15, all others 0", "15"},
		{"time-travel 12, every other checker 0", "12"},
		{"0 on every checker", "0"},
		{"0", "0"},
	} {
		v, err := violations(tc.cell)
		if err != nil || v.Text != tc.want {
			t.Errorf("violations(%q) = %q, %v; want %q", tc.cell, v.Text, err, tc.want)
		}
	}
}

func TestDemo(t *testing.T) {
	md := "# x\n\n- Ran: 2026-12-03 15:47 to 16:15 UTC, on commit `950435f46391861b63a8dc0f88ddf89d5042e335`.\n" +
		"- Setup: the kubelet restarted against B and watched for 1m0s.\n\n## Closing lines\n\n```\n" +
		"demo-59848 upstream watchlist=off: deleted pod started again: yes (3 of 3 trials) — real node; pods: LIST\n" +
		"demo-59848 upstream watchlist=on: deleted pod started again: no (0 of 3 trials) — real node\n```\n\n## Trials\n\n" +
		"| configuration | trial | started again | took | evidence |\n|---|---:|:-:|---:|---|\n" +
		"| upstream-watchlist-off | 1 | yes | 1m27s | created after the restart: yes, the first 1.6s after it; seconds in which it ran while the new web-0 (uid a) ran on hollow-0: 59; at the end |\n" +
		"| upstream-watchlist-off | 2 | yes | 1m28s | created after the restart: yes, the first 1.4s after it; seconds in which it ran while the new web-0 (uid b) ran on hollow-0: 58; at the end |\n" +
		"| upstream-watchlist-on | 1 | no | 1m47s | created after the restart: none |\n"
	src := NewSource(fstest.MapFS{"docs/results/demo-59848.md": {Data: []byte(md)}}, nil)
	wantValues(t, src, map[string]string{
		"demo-59848.upstream.watchlist-off":     "3 of 3",
		"demo-59848.upstream.first-container-s": "1.4–1.6",
		"demo-59848.upstream.overlap-s":         "58–59",
		"demo-59848.trial-s":                    "87–107",
		"demo-59848.observed-s":                 "60",
		"demo-59848.run-minutes":                "28",
		"demo-59848.commit":                     "`950435f`",
		"demo-59848.date":                       "2026-12-03",
		"demo-59848.closing-lines":              "```\ndemo-59848 upstream watchlist=off: deleted pod started again: yes (3 of 3 trials)\ndemo-59848 upstream watchlist=on: deleted pod started again: no (0 of 3 trials)\n```",
	})
}

// cell builds a cluster cell for the tests.
func cell(config, mode string, nodes, repeat int, cpu, reads, p99 float64, staleRV0, readsRV0 int64) clusterCell {
	c := clusterCell{Config: config, Mode: mode, Nodes: nodes, Repeat: repeat, APICPUSec: cpu, EtcdReads: reads, ListP99Ms: &p99}
	c.Probe.Writes = int(readsRV0)
	c.Probe.Reads = map[string]int64{probeGetZero: readsRV0, probeListZero: readsRV0}
	c.Probe.Stale = map[string]int64{probeGetZero: staleRV0}
	return c
}

func TestCluster(t *testing.T) {
	r := &clusterReport{Cells: []clusterCell{
		cell(cfgUpstream, modeSingle, 10, 0, 31, 4276, 49.5, 0, 239),
		cell(cfgFreshcache, modeSingle, 10, 0, 30.5, 3973, 49.7, 37, 239),
		cell(cfgGate, modeSingle, 10, 0, 34, 5266, 89.6, 0, 239),
		cell(cfgUpstream, modeSingle, 75, 1, 49.1, 4087, 5154, 3, 113),
		cell(cfgGate, modeSingle, 75, 1, 48.6, 1206, 4631, 0, 105),
		cell(cfgUpstream, modeSingle, 75, 2, 47.3, 3789, 7072, 7, 83),
		cell(cfgGate, modeSingle, 75, 2, 51.3, 1726, 3240, 0, 153),
		cell(cfgUpstream, modeSingle, 75, 3, 51.3, 4470, 1980, 8, 185),
		cell(cfgGate, modeSingle, 75, 3, 51.5, 2225, 1979, 0, 180),
		cell(cfgFreshcache, modeSingle, 100, 0, 53, 2382, 42470, 25, 54),
		cell(cfgUpstream, modeHA, 30, 0, 36.8, 4889, 159.9, 27, 239),
	}}
	if n, err := r.ratioNodes(); err != nil || n != 75 {
		t.Errorf("ratioNodes = %d, %v; want 75 (100 has no upstream cell)", n, err)
	}
	reads, err := r.pairRatios(readsOf)
	if err != nil || len(reads) != 3 || F(median(reads), 2).Text != "0.46" {
		t.Errorf("etcd-reads pairs %v (%v), want three with median 0.46", reads, err)
	}
	if got := r.upstreamGroups(); !slices.Equal(got, []group{{modeSingle, 10}, {modeSingle, 75}, {modeHA, 30}}) {
		t.Errorf("upstreamGroups = %v", got)
	}
	// Pooled over the three repeats: 18 stale of 2×381 rv=0 reads.
	if v, ok := r.staleRV0(cfgUpstream, group{modeSingle, 75}); !ok || Pct(v).Text != "2.4" {
		t.Errorf("upstream's stale rv=0 share at 75 = %v, %v", v, ok)
	}
	table, err := r.kepTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| 10 | 0.98 / 0.93 / 1.00 | 1.10 / 1.23 / 1.81 | 0%, 7.7%, 0 |",
		"| 75 | – | 1.00 / 0.46 / 0.90, medians of 3 pairs | 2.4%, –, 0 |",
		"| HA 30 | – | – | 5.6%, –, – |",
	} {
		if !slices.Contains(splitLines(table.Text), row) {
			t.Errorf("the table lacks the row %q:\n%s", row, table.Text)
		}
	}
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

func TestStorageRows(t *testing.T) {
	rows := []storageRow{
		{Backend: "freshcache", Scenario: "list-node", RV: rvConsistent, Concurrency: 32, OpsPerSec: 7085.6},
		{Backend: "freshcache", Scenario: "list-node", RV: rvZero, Concurrency: 32, OpsPerSec: 10279.7},
		{Backend: "freshcache", Scenario: "list-node", RV: rvConsistent, Concurrency: 32, OpsPerSec: 7762.8},
		{Backend: "freshcache", Scenario: "list-node", RV: rvZero, Concurrency: 32, OpsPerSec: 10178.1},
		{Backend: "freshcache", Scenario: "list-node", RV: rvConsistent, Concurrency: 32, OpsPerSec: 6838.6},
		{Backend: "freshcache", Scenario: "list-node", RV: rvZero, Concurrency: 32, OpsPerSec: 10029.9},
		{Backend: "freshcache", Scenario: "list-node", RV: rvZero, Concurrency: 32, OpsPerSec: 8066, GateMs: 0.7},
	}
	src := jsonSource(t, "docs/results/consistent-reads.json", map[string]any{"rows": rows})
	wantValues(t, src, map[string]string{
		"consistent-reads.list-node.fresh-vs-rv0":       "0.69",
		"consistent-reads.list-node.fresh-vs-rv0.pairs": "0.68–0.76",
		"consistent-reads.list-node.freshcache.ops":     "6,839–7,763",
		"consistent-reads.pair-count":                   "three",
		"consistent-reads.target.list-node-vs-rv0":      "missed",
	})
	if _, err := src.Value("consistent-reads.list-node.upstream.ops"); err == nil {
		t.Error("a figure whose rows are missing computed without an error")
	}
}

// TestScale: scale.json's cells are the cluster benchmark's with a
// restart storm each; the storm's ratio is of etcd reads, and the
// ratios pair repeats at the largest node count both ran.
func TestScale(t *testing.T) {
	type storm struct {
		SyncP99Ms float64            `json:"sync_p99_ms"`
		EtcdReads float64            `json:"etcd_reads"`
		EtcdReqs  float64            `json:"etcd_requests"`
		Rejected  map[string]float64 `json:"rejected"`
	}
	type scaleCell struct {
		clusterCell
		Storm storm `json:"storm"`
	}
	mk := func(config string, nodes, repeat int, cpu, reads, p99, sync, stormReads float64) scaleCell {
		return scaleCell{cell(config, modeSingle, nodes, repeat, cpu, reads, p99, 0, 100), storm{sync, stormReads, stormReads + 500, nil}}
	}
	cells := []scaleCell{
		mk(cfgUpstream, 200, 0, 15.7, 2524, 73.7, 507, 100),
		mk(cfgGate, 200, 0, 15.7, 2330, 67.5, 504, 4),
		mk(cfgUpstream, 1000, 1, 50, 4000, 100, 11000, 500),
		mk(cfgGate, 1000, 1, 45, 2000, 90, 9000, 25),
		mk(cfgUpstream, 1000, 2, 52, 4000, 100, 12000, 520),
		mk(cfgGate, 1000, 2, 54, 1000, 120, 13000, 52),
		mk(cfgFreshcache, 1000, 1, 50, 3000, 100, 10000, 20),
	}
	cells[len(cells)-1].Probe.Stale[probeGetZero] = 9 // rv=0 is not promised fresh without the gate
	// The gate's absolute storm 429s and wait p99 are medians over its
	// paired cells at 1,000 nodes only (not the 200-node one).
	for i, v := range map[int]float64{1: 99, 3: 10, 5: 30} {
		cells[i].Storm.Rejected = map[string]float64{"all": v + 1, "freshness wait": v}
		w := v * 10
		cells[i].FreshWaitP99Ms = &w
	}
	src := jsonSource(t, "docs/results/scale.json", map[string]any{"git_commit": "4be7237abcdef", "cells": cells})
	wantValues(t, src, map[string]string{
		"scale.commit":               "`4be7237`",
		"scale.ratio.nodes":          "1,000",
		"scale.ratio.pair-count":     "2",
		"scale.ratio.apiserver-cpu":  "0.97",
		"scale.ratio.etcd-reads":     "0.38",
		"scale.ratio.list-p99":       "1.05",
		"scale.ratio.storm-sync-p99": "0.95",
		"scale.ratio.storm-etcd":     "0.08",
		"scale.promised-stale":       "No",
		"scale.gate.storm-429":       "20",
		"scale.gate.wait-p99-ms":     "200",
	})
	// A storm without 429s reports no counter that moved: an empty map
	// is 0, not a missing figure.
	cells[5].Storm.Rejected = map[string]float64{}
	src = jsonSource(t, "docs/results/scale.json", map[string]any{"git_commit": "4be7237abcdef", "cells": cells})
	wantValues(t, src, map[string]string{"scale.gate.storm-429": "5"})
}

// wantValues checks that src gives each key the text want names.
func wantValues(t *testing.T, src *Source, want map[string]string) {
	t.Helper()
	for key, w := range want {
		v, err := src.Value(key)
		if err != nil || v.Text != w {
			t.Errorf("%s = %q, %v; want %q", key, v.Text, err, w)
		}
	}
}

// jsonSource is a Source over one results file, path, holding doc as JSON.
func jsonSource(t *testing.T, path string, doc any) *Source {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return NewSource(fstest.MapFS{path: {Data: data}}, nil)
}
