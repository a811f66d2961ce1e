package bench

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestClusterConfigValidate(t *testing.T) {
	good := ClusterConfig{Configs: []string{ClusterUpstream}, Nodes: []int{2}, PodsPerNode: 1, ReplicasPerDeployment: 1,
		Window: time.Second, CalibWindow: time.Second, CalibRate: 1, CalibListAllRate: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*ClusterConfig)
		flag   string
	}{
		{func(c *ClusterConfig) { c.Nodes = []int{10, -1} }, "--nodes"},
		{func(c *ClusterConfig) { c.Nodes = []int{0} }, "--nodes"},
		{func(c *ClusterConfig) { c.HANodes = -3 }, "--ha-nodes"},
		{func(c *ClusterConfig) { c.Configs = []string{"upstream", "fresh"} }, "--configs"},
		{func(c *ClusterConfig) { c.PodRate = -1 }, "--pod-rate"},
		{func(c *ClusterConfig) { c.Window = 0 }, "--window"},
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
	c := ClusterConfig{Configs: []string{ClusterUpstream, ClusterFreshRV0}, Nodes: []int{10, 50}, HANodes: 50}
	var got []string
	for _, x := range c.cells() {
		got = append(got, fmt.Sprintf("%s %s %d", x.config, x.mode, x.nodes))
	}
	want := []string{"upstream single 10", "freshcache-fresh-rv0 single 10", "upstream single 50", "freshcache-fresh-rv0 single 50", "upstream ha 50", "freshcache-fresh-rv0 ha 50"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cells %v", got)
	}
}

// TestLocalUpArgsComeLast: flags given with --local-up-arg follow the
// configuration's own, so they reach every cluster and can override them.
func TestLocalUpArgsComeLast(t *testing.T) {
	cfg := ClusterConfig{ReadyTimeout: time.Minute, LocalUpArgs: []string{"--consistent-read-timeout-action=reject"}}
	got := cfg.localUpArgs(cell{ClusterFreshRV0, ModeHA, 3})
	want := []string{"--controllers=true", "--nodes=3", "--ready-timeout=1m0s", "--apiservers=2", "--etcd-members=3",
		"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true", "--consistent-read-timeout-action=reject"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("local-up args %v, want %v", got, want)
	}
}
