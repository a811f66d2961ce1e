package cluster

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestClusterConfigValidate(t *testing.T) {
	good := Config{Configs: []string{Upstream}, Nodes: []int{2}, Repeats: 1, PodsPerNode: 1, ReplicasPerDeployment: 1,
		Window: time.Second, CalibWindow: time.Second, CalibRate: 1, CalibListAllRate: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*Config)
		flag   string
	}{
		{func(c *Config) { c.Nodes = []int{10, -1} }, "--nodes"},
		{func(c *Config) { c.Nodes = []int{0} }, "--nodes"},
		{func(c *Config) { c.HANodes = -3 }, "--ha-nodes"},
		{func(c *Config) { c.Configs = []string{"upstream", "fresh"} }, "--configs"},
		{func(c *Config) { c.PodRate = -1 }, "--pod-rate"},
		{func(c *Config) { c.Window = 0 }, "--window"},
		{func(c *Config) { c.SetupInflightPods = -1 }, "--setup-inflight-pods"},
		{func(c *Config) { c.Repeats = 0 }, "--repeat"},
		{func(c *Config) { c.NodeKind = "virtual" }, "--node-kind"},
		{func(c *Config) { c.Storm = true; c.StormTimeout = time.Minute }, "--node-watches"},
		{func(c *Config) { c.Storm, c.NodeWatches = true, true }, "--storm-timeout"},
		{func(c *Config) { c.ControllerQPS = -1 }, "--controller-qps"},
	} {
		cfg := good
		c.change(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("want an error naming %s, got %v", c.flag, err)
		}
	}
}

func TestClusterCellsOrder(t *testing.T) {
	c := Config{Configs: []string{Upstream, FreshRV0}, Nodes: []int{10, 50}, HANodes: 50}
	var got []string
	for _, x := range c.cells() {
		got = append(got, fmt.Sprintf("%s %s %d", x.config, x.mode, x.nodes))
	}
	want := []string{"upstream single 10", "freshcache-fresh-rv0 single 10", "upstream single 50", "freshcache-fresh-rv0 single 50", "upstream ha 50", "freshcache-fresh-rv0 ha 50"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cells %v", got)
	}
}

// TestClusterCellsRepeatInterleaved: with --repeat, each node count's
// round of configurations runs again before the next count, the order
// rotated each round, and every cell knows its repeat (and so its own
// data directory).
func TestClusterCellsRepeatInterleaved(t *testing.T) {
	c := Config{Configs: AllConfigs, Nodes: []int{75}, HANodes: 30, Repeats: 3}
	var got []string
	dirs := map[string]bool{}
	for _, x := range c.cells() {
		got = append(got, fmt.Sprintf("%s %s %d #%d", x.config, x.mode, x.nodes, x.repeat))
		dirs[cellDir("/d", x)] = true
	}
	want := []string{
		"upstream single 75 #1", "freshcache single 75 #1", "freshcache-fresh-rv0 single 75 #1",
		"freshcache single 75 #2", "freshcache-fresh-rv0 single 75 #2", "upstream single 75 #2",
		"freshcache-fresh-rv0 single 75 #3", "upstream single 75 #3", "freshcache single 75 #3",
		"upstream ha 30 #1", "freshcache ha 30 #1", "freshcache-fresh-rv0 ha 30 #1",
		"freshcache ha 30 #2", "freshcache-fresh-rv0 ha 30 #2", "upstream ha 30 #2",
		"freshcache-fresh-rv0 ha 30 #3", "upstream ha 30 #3", "freshcache ha 30 #3",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cells\n got %v\nwant %v", got, want)
	}
	if len(dirs) != len(want) {
		t.Errorf("%d data directories for %d cells", len(dirs), len(want))
	}
	if x := (Config{Configs: []string{Upstream}, Nodes: []int{3}, Repeats: 1}).cells(); len(x) != 1 || x[0].repeat != 0 || cellDir("/d", x[0]) != "/d/single-3-upstream" {
		t.Errorf("an unrepeated run's cells %+v", x)
	}
}

// TestLocalUpArgsComeLast: flags given with --local-up-arg follow the
// configuration's own, so they reach every cluster and can override them.
func TestLocalUpArgsComeLast(t *testing.T) {
	cfg := Config{ReadyTimeout: time.Minute, LocalUpArgs: []string{"--consistent-read-timeout-action=reject"}}
	got := cfg.localUpArgs(cell{FreshRV0, modeHA, 3, 0})
	want := []string{"--controllers=true", "--nodes=3", "--ready-timeout=1m0s", "--apiservers=2", "--etcd-members=3",
		"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true", "--consistent-read-timeout-action=reject"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("local-up args %v, want %v", got, want)
	}
}

// TestLocalUpArgsKwok: kwok nodes replace the hollow ones, the
// controllers' QPS reaches local-up, and they run without leader election.
func TestLocalUpArgsKwok(t *testing.T) {
	cfg := Config{ReadyTimeout: time.Minute, NodeKind: NodesKwok, ControllerQPS: 150}
	got := cfg.localUpArgs(cell{Upstream, modeSingle, 1000, 2})
	want := []string{"--controllers=true", "--leader-elect=false", "--nodes=0", "--kwok-nodes=1000", "--ready-timeout=1m0s", "--controller-kube-api-qps=150",
		"--watch-cache-implementation=upstream"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("local-up args %v, want %v", got, want)
	}
}

func TestNodeNamePrefix(t *testing.T) {
	for _, tc := range []struct {
		nodes []string
		want  string
		ok    bool
	}{
		{[]string{"kwok-0", "kwok-1", "kwok-2"}, "kwok-", true},
		{[]string{"hollow-0"}, "hollow-", true},
		{[]string{"0", "1"}, "", true},
		{nil, "", false},
		{[]string{"kwok-1", "kwok-2"}, "", false},
		{[]string{"kwok-0", "kwok-2"}, "", false},
		{[]string{"kwok-0", "hollow-1"}, "", false},
		{[]string{"kwok-0", "kwok-01"}, "", false},
	} {
		got, ok := nodeNamePrefix(tc.nodes)
		if got != tc.want || ok != tc.ok {
			t.Errorf("nodeNamePrefix(%v) = %q, %v; want %q, %v", tc.nodes, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSetupWave(t *testing.T) {
	thirty := []int32{30, 30, 30, 30}
	cases := []struct {
		name              string
		next              []int32
		pending, inflight int
		want              int
	}{
		{"unpaced creates all", thirty, 500, 0, 4},
		{"fits exactly", thirty, 0, 120, 4},
		{"fills up to the budget", thirty, 0, 100, 3},
		{"counts what is pending", thirty, 45, 100, 1},
		{"full budget waits", thirty, 100, 100, 0},
		{"over budget waits", thirty, 130, 100, 0},
		{"larger than the budget, nothing pending", []int32{250, 30}, 0, 100, 1},
		{"larger than the budget, something pending", []int32{250}, 1, 100, 0},
		{"nothing left", nil, 0, 100, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := setupWave(c.next, c.pending, c.inflight); got != c.want {
				t.Errorf("setupWave(%v, pending %d, inflight %d) = %d, want %d", c.next, c.pending, c.inflight, got, c.want)
			}
		})
	}
}
