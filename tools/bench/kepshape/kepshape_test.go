package kepshape

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	clusterbench "github.com/freshcache/freshcache/tools/bench/cluster"
	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

func TestValidate(t *testing.T) {
	good := DefaultConfig()
	good.BinDir = "/bin"
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		change func(*Config)
		flag   string
	}{
		{func(c *Config) { c.Configs = nil }, "--configs"},
		{func(c *Config) { c.Configs = []string{"upstream", "cacheless"} }, `"cacheless"`},
		{func(c *Config) { c.Objects = 0 }, "--objects"},
		{func(c *Config) { c.ValueBytes = -1 }, "--value-bytes"},
		{func(c *Config) { c.ListRate = 0 }, "--list-rate"},
		{func(c *Config) { c.Window = 0 }, "--window"},
		{func(c *Config) { c.Warmup = -time.Second }, "--warmup"},
		{func(c *Config) { c.BinDir = "" }, "--bin-dir"},
	} {
		c := good
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("want an error naming %s, got %v", tc.flag, err)
		}
	}
}

func TestLocalUpArgs(t *testing.T) {
	for _, c := range AllConfigs {
		args := strings.Join(localUpArgs(c), " ")
		if !strings.Contains(args, "--nodes=0 --controllers=false") {
			t.Errorf("%s: %s", c, args)
		}
	}
	if got := strings.Join(localUpArgs(ConfigEtcd), " "); !strings.Contains(got, "--watch-cache=false") {
		t.Errorf("etcd baseline: %s", got)
	}
	if got := strings.Join(localUpArgs(clusterbench.FreshRV0), " "); !strings.Contains(got, "FreshResourceVersionZero=true") {
		t.Errorf("fresh rv0: %s", got)
	}
	if localUpArgs("nope") != nil {
		t.Error("unknown configuration has flags")
	}
}

func TestRatiosAndReport(t *testing.T) {
	rows := []Row{
		{Config: clusterbench.Upstream, Objects: 100, Seconds: 10, APICPUSec: 2, P99Ms: 100},
		{Config: clusterbench.FreshRV0, Objects: 100, Seconds: 10, APICPUSec: 2.1, P99Ms: 120},
		{Config: ConfigEtcd, Objects: 100, Seconds: 10, APICPUSec: 20, P99Ms: 3000, Errors: 2, FirstError: "timeout"},
	}
	r := ComputeRatios(rows)
	want := "kep-2340-bench ratios: objects=100 apiserver-cpu=1.05 list-p99=1.20 etcd-baseline-cpu=10.00 etcd-baseline-p99=30.00"
	if got := r.Line(); got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
	ts := targets(r)
	if ts[0][3] != "yes" || ts[1][3] != "no" {
		t.Errorf("targets %v", ts)
	}
	if got := ComputeRatios(rows[1:]).Line(); !strings.Contains(got, "objects=0 apiserver-cpu=n/a") {
		t.Errorf("no upstream: %s", got)
	}
	b := reporttest.Render(t, func(w io.Writer) error { return WriteMarkdown(w, Report{Settings: DefaultConfig(), Rows: rows}) })
	reporttest.CheckContains(t, "report", b, want, "| etcd | 100 | 2.00 |", "etcd's first LIST error: `timeout`", "| KEP-2340, apiserver cores | 0.63 | 6.92 |", "here (100 objects), upstream: apiserver cores | 0.20 | 2.00 | 0.10 |")
}

func TestNearestRank(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0.5: 5, 0.99: 10, 0.1: 1, 0: 1} {
		if got := nearestRank(s, q); got != want {
			t.Errorf("q %v: %v, want %v", q, got, want)
		}
	}
}

// TestSmoke runs the scenario small against the real binaries: every
// configuration answers every LIST with no object and no error.
func TestSmoke(t *testing.T) {
	binDir := os.Getenv("FRESHCACHE_BIN_DIR")
	if binDir == "" {
		t.Skip("needs the built local-up and kube-apiserver: FRESHCACHE_BIN_DIR (make test-bench)")
	}
	cfg := ShortConfig()
	cfg.BinDir, cfg.DataDir = binDir, t.TempDir()
	cfg.Configs = []string{clusterbench.Upstream, clusterbench.FreshRV0, ConfigEtcd}
	cfg.Objects, cfg.ListRate, cfg.Warmup, cfg.Window = 2000, 4, time.Second, 3*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Lists < 10 || r.Errors != 0 || r.P99Ms <= 0 || r.APICPUSec <= 0 {
			t.Errorf("%s: %+v", r.Config, r)
		}
	}
	// Without a cache every LIST reads etcd; with one, none does.
	if rows[2].EtcdRanges < float64(rows[2].Lists) {
		t.Errorf("etcd baseline: %v Range requests for %d LISTs", rows[2].EtcdRanges, rows[2].Lists)
	}
}
