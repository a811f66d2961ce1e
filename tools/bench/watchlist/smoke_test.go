package watchlist

import (
	"context"
	"os"
	"testing"
	"time"

	clusterbench "github.com/freshcache/freshcache/tools/bench/cluster"
)

// TestSmoke runs the whole scenario, small and short, on one
// configuration (freshcache with FreshResourceVersionZero) against the
// built binaries. It checks what the harness recorded: every phase, reads
// of every kind without errors, WatchLists that saw every object, and the
// server's wait histograms. Never how fast anything was.
func TestSmoke(t *testing.T) {
	binDir := os.Getenv("FRESHCACHE_BIN_DIR")
	if binDir == "" {
		t.Skip("needs the built local-up and kube-apiserver: FRESHCACHE_BIN_DIR (make test-bench)")
	}
	if testing.Short() {
		t.Skip("starts a local-up cluster")
	}
	cfg := ShortConfig()
	cfg.BinDir, cfg.DataDir = binDir, t.TempDir()
	cfg.Configs = []string{clusterbench.FreshRV0}
	cfg.Objects, cfg.HugeNamespaces, cfg.WatchLists = 1000, 2, 2
	cfg.Idle, cfg.Warmup, cfg.Baseline, cfg.Contended, cfg.Alone = time.Second, time.Second, 2*time.Second, 3*time.Second, 2*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	run := res.Runs[0]
	if run.Objects != cfg.Objects+cfg.SmallObjects {
		t.Errorf("objects = %d, want %d", run.Objects, cfg.Objects+cfg.SmallObjects)
	}
	for _, name := range []string{PhaseIdle, PhaseBaseline, PhaseContended, PhaseAlone} {
		p := run.Phase(name)
		if p == nil {
			t.Fatalf("phase %q missing", name)
		}
		if p.MetricsError != "" {
			t.Errorf("%s: %s", name, p.MetricsError)
		}
		if p.Writes == 0 || p.WriteErrors != 0 {
			t.Errorf("%s: %d writes, %d failed", name, p.Writes, p.WriteErrors)
		}
	}
	for _, name := range []string{PhaseBaseline, PhaseContended} {
		p := run.Phase(name)
		for _, kind := range AllReads {
			r := p.Read(kind)
			if r == nil || r.Ops == 0 || r.Errors != 0 {
				t.Errorf("%s, %s: %+v", name, kind, r)
			}
		}
		if len(p.Waits) == 0 {
			t.Errorf("%s: no freshness waits recorded", name)
		}
		if p.Runtime.SchedLatency == nil {
			t.Errorf("%s: no scheduling latency from the apiserver's /metrics", name)
		}
		if p.Runtime.RevisionFetch == nil {
			t.Errorf("%s: freshcache's revision fetches were not read", name)
		}
	}
	var completed int64
	for _, name := range []string{PhaseContended, PhaseAlone} {
		wl := run.Phase(name).WatchList
		completed += wl.Completed
		if wl.Errors != 0 {
			t.Errorf("%s: WatchList errors: %s", name, wl.FirstError)
		}
		if wl.Completed > 0 && wl.InitialEventsMin < int64(run.Objects) {
			t.Errorf("%s: a WatchList saw %d initial events, fewer than the %d configmaps loaded", name, wl.InitialEventsMin, run.Objects)
		}
	}
	if completed == 0 {
		t.Error("no WatchList completed")
	}
	if !Derive(run).HasCPUShare {
		t.Error("phase C gave no CPU per event")
	}
}
