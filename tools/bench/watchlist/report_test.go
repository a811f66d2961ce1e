package watchlist

import (
	"io"
	"math"
	"path/filepath"
	"testing"
	"time"

	clusterbench "github.com/freshcache/freshcache/tools/bench/cluster"
	"github.com/freshcache/freshcache/tools/bench/report"
	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

// fakeRun builds a configuration's phases: reads/s and p99 per phase,
// apiserver cores, and WatchList events.
func fakeRun(config string, readsA, readsB, p99A, p99B float64) ConfigRun {
	reads := func(perSec, p99 float64) []ReadStats {
		var out []ReadStats
		for i, k := range AllReads {
			out = append(out, ReadStats{Kind: k, Ops: int64(perSec * 10 / 4), OpsPerSec: perSec / 4, P50Ms: 1, P99Ms: p99 - float64(i)})
		}
		return out
	}
	return ConfigRun{
		Config: config, Args: localUpArgs(config), Objects: 1000,
		Phases: []PhaseResult{
			{Name: PhaseIdle, Seconds: 10, CPU: CPUStats{APIServer: 0.1}},
			{Name: PhaseBaseline, Seconds: 10, Reads: reads(readsA, p99A), CPU: CPUStats{APIServer: 1.0}},
			{Name: PhaseContended, Seconds: 10, Reads: reads(readsB, p99B), CPU: CPUStats{APIServer: 1.2},
				WatchList: WatchListStats{Completed: 20, P50Ms: 1500, Events: 200_000, InitialEventsMin: 1003, InitialEventsMax: 1003},
				Waits:     []WaitStats{{Resource: resConfigMaps, Verb: "list", Count: 100, P50Ms: 0.5, P99Ms: 3, Release: &Quantiles{P50Ms: 0.25, P99Ms: 2}}},
				Runtime:   RuntimeStats{SchedLatency: &Quantiles{P50Ms: 0.1, P99Ms: 7.5}, GCCores: 0.3, RevisionFetch: &Quantiles{P50Ms: 0.4, P99Ms: 1.5}}},
			// 0.9 cores above idle over 10 s for 300,000 events: 30 µs each.
			{Name: PhaseAlone, Seconds: 10, CPU: CPUStats{APIServer: 1.0}, WatchList: WatchListStats{Completed: 30, Events: 300_000, InitialEventsMin: 1003, InitialEventsMax: 1003}},
		},
	}
}

func TestDerive(t *testing.T) {
	d := Derive(fakeRun(clusterbench.Freshcache, 1000, 600, 20, 50))
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("throughput drop", d.ThroughputDrop, 0.4)
	near("cpu per event µs", d.WatchListCPUPerEventUs, 30)
	// B: 200,000 events * 30 µs over 10 s = 0.6 cores, of 1.2.
	near("watchlist cores", d.WatchListCores, 0.6)
	near("watchlist share", d.WatchListCPUShare, 0.5)
	near("worst p99 B", d.WorstP99Ms, 50)
	near("worst p99 A", d.BaselineP99Ms, 20)
	if d.WorstKind != AllReads[0] || !d.MeetsSLO || !d.MeetsCPU || !d.HasCPUShare {
		t.Errorf("derived %+v", d)
	}
	slow := Derive(fakeRun(clusterbench.Upstream, 1000, 100, 20, 3000))
	if slow.MeetsSLO || slow.MeetsCPU {
		t.Errorf("a 3 s p99 and a 90%% drop met the targets: %+v", slow)
	}
	noC := fakeRun(clusterbench.Freshcache, 1000, 600, 20, 50)
	noC.Phases = noC.Phases[:3]
	if d := Derive(noC); d.HasCPUShare || d.MeetsCPU {
		t.Errorf("without phase C a share was claimed: %+v", d)
	}
	if d := Derive(ConfigRun{Config: "x"}); d != (Derived{}) {
		t.Errorf("a run without phases: %+v", d)
	}
}

func TestComputeRatios(t *testing.T) {
	runs := []ConfigRun{
		fakeRun(clusterbench.Upstream, 1000, 100, 20, 3000),
		fakeRun(clusterbench.FreshRV0, 1000, 700, 10, 40),
		fakeRun(clusterbench.Freshcache, 1000, 600, 20, 50),
	}
	r := ComputeRatios(runs)
	if r.Config != clusterbench.FreshRV0 || r.ReadP99Ms != 40 || r.UpstreamReadP99Ms != 3000 || math.Abs(r.ThroughputDrop-0.3) > 1e-9 {
		t.Fatalf("ratios %+v", r)
	}
	// Without fresh-rv0, freshcache's.
	if r := ComputeRatios([]ConfigRun{runs[2], runs[0]}); r.Config != clusterbench.Freshcache || r.ReadP99Ms != 50 {
		t.Fatalf("ratios without fresh-rv0: %+v", r)
	}
	want := "watchlist ratios: read-p99-ms=40.0 upstream-read-p99-ms=3000.0 throughput-drop=0.30 watchlist-cpu-share=0.50"
	if got := RatiosLine(r); got != want {
		t.Fatalf("ratios line\n got %s\nwant %s", got, want)
	}
}

func TestWriteMarkdown(t *testing.T) {
	cfg := DefaultConfig()
	res := Result{
		Date: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), GitCommit: "abc123", Command: "freshcache-bench watchlist",
		Machine: report.Machine{CPU: "Test CPU", Cores: 2, GOMAXPROCS: 2, GoVersion: "go1.26", OS: "linux/amd64"},
		Config:  cfg, Notes: []string{"a note"},
		Runs: []ConfigRun{
			fakeRun(clusterbench.Upstream, 1000, 100, 20, 3000),
			fakeRun(clusterbench.FreshRV0, 1000, 700, 10, 40),
			{Config: clusterbench.Freshcache, Error: "local-up exited\nwith a long\tmessage"},
		},
	}
	res.Runs[0].Phases[2].Reads[1].Errors, res.Runs[0].Phases[2].Reads[1].FirstError = 3, "the server is currently unable"
	res.Runs[1].Phases[3].CPU.Other = 0.7
	res.Runs[0].Phases[2].WatchList.Errors, res.Runs[0].Phases[2].WatchList.FirstError = 1, "Too large resource version"
	res.Ratios = ComputeRatios(res.Runs)
	md := reporttest.Render(t, func(w io.Writer) error { return WriteMarkdown(w, res) })
	reporttest.CheckContains(t, "report", md,
		"# WatchList over a huge resource (kubernetes#138728)",
		"on commit `abc123`", "2 cores (GOMAXPROCS 2)", "100000 configmaps",
		"Note: a note",
		"- Noise: other work on the machine took 0.00–0.70 cores of the 2",
		"| upstream | 20.0 | 3000.0 (GET secret) | **no** | 2998 / 3000 | 7.5 | 1000 | 100 | 90% |",
		"| freshcache-fresh-rv0 | 10.0 | 40.0 (GET secret) | yes | 38 / 40 | 7.5 |",
		"| freshcache | — |",
		"| upstream | reads+watchlists | configmaps | list | 100 | 0.50 | 3.0 | 0.25 | 2.0 | 0 | 0 |",
		"| upstream | reads+watchlists | 1.20 | 0.30 | 0.00 | 0.00 | 0.00 | 0.10 / 7.5 | 0.40 / 1.5 | 0 | 0.0 |",
		"| upstream | reads | 1.00 | 0.00 | 0.00 | 0.00 | 0.00 | — | — |",
		"| freshcache-fresh-rv0 | watchlists only | 30 |", "| 1003 |",
		"- freshcache stopped early: local-up exited with a long message",
		"LIST secrets (ns): 3 errors, the first: the server is currently unable",
		"WatchList: 1 errors, the first: Too large resource version",
		"watchlist ratios: read-p99-ms=40.0 upstream-read-p99-ms=3000.0",
	)
	if t.Failed() {
		t.Log(md)
	}

	path := filepath.Join(t.TempDir(), "watchlist.json")
	if err := res.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != 3 || back.Ratios != res.Ratios || back.Runs[1].Phase(PhaseContended).WatchList.Completed != 20 {
		t.Fatalf("JSON round trip: %+v", back.Ratios)
	}
	// The markdown rendered again from the JSON is the same.
	again := reporttest.Render(t, func(w io.Writer) error { return WriteMarkdown(w, back) })
	if again != md {
		t.Error("the markdown rendered from the JSON differs from the original")
	}
	if _, err := ReadResult(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file was read")
	}
}
