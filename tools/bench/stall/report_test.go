package stall

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

func ranConfig(name string, apiGrowth, etcdGrowth float64, n5xx int) ConfigResult {
	rec := Millis(1500)
	return ConfigResult{
		Name: name, Args: Args(name),
		Timeline:  Timeline{SteadyFrom: 10 * time.Second, StallAt: 40 * time.Second, ResumeAt: 50 * time.Second, End: 95 * time.Second},
		APIServer: Level{Pre: 400 << 20, Peak: int64(apiGrowth * float64(400<<20)), Growth: apiGrowth},
		Etcd:      Level{Pre: 200 << 20, Peak: int64(etcdGrowth * float64(200<<20)), Growth: etcdGrowth},
		Reads:     Counts{OK: 900, Retry: 40, Err5xx: n5xx},
		P99Steady: 800, P99FromStall: 10400, Recovery: &rec,
		OutcomesFromStall: map[string]float64{OutcomeOverBudget: 30, OutcomeCache: 500, OutcomeFallback: 1},
		EtcdSentFromStall: 51e6,
		FirstErrors:       map[string]string{Class429: "429 Too Many Requests | over budget\nsecond line"},
	}
}

func TestComputeRatiosAndClosingLine(t *testing.T) {
	configs := []ConfigResult{
		ranConfig(Upstream, 4, 3, 2),
		{Name: UpstreamSkipFallback, Skipped: "unknown flag"},
		ranConfig(Freshcache, 1.2, 1.5, 0),
	}
	r := ComputeRatios(configs)
	want := "stall ratios: apiserver-rss-growth=0.30 etcd-rss-growth=0.50 (freshcache/upstream) 5xx=0"
	if got := r.ClosingLine(); got != want {
		t.Errorf("closing line = %q, want %q", got, want)
	}

	// Without upstream there is no ratio, but freshcache's 5xx count stays.
	r = ComputeRatios(configs[1:])
	want = "stall ratios: apiserver-rss-growth=n/a etcd-rss-growth=n/a (freshcache/upstream) 5xx=0"
	if got := r.ClosingLine(); got != want {
		t.Errorf("closing line = %q, want %q", got, want)
	}

	// A configuration that stopped early does not count.
	failed := ranConfig(Freshcache, 1, 1, 0)
	failed.Error = "etcd died"
	r = ComputeRatios([]ConfigResult{configs[0], failed})
	want = "stall ratios: apiserver-rss-growth=n/a etcd-rss-growth=n/a (freshcache/upstream) 5xx=n/a"
	if got := r.ClosingLine(); got != want {
		t.Errorf("closing line = %q, want %q", got, want)
	}
}

func TestWriteMarkdown(t *testing.T) {
	cfg := validConfig()
	configs := []ConfigResult{
		ranConfig(Upstream, 4, 3, 2),
		{Name: FreshcacheUnbounded, Args: Args(FreshcacheUnbounded), Skipped: "Error: unknown flag: --consistent-read-fallback-budget"},
		ranConfig(Freshcache, 1.2, 1.5, 0),
		ranConfig(FreshcacheUnbounded, 6, 2, 0),
	}
	configs[1].Name = UpstreamSkipFallback
	configs[1].Args = Args(UpstreamSkipFallback)
	configs[2].PeakFallbackObjects = 5000
	never := ranConfig(FreshcacheReject, 1, 1, 0)
	never.Recovery = nil
	configs = append(configs, never)
	res := Result{When: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Commit: "abc123", Command: "freshcache-bench stall", Config: cfg,
		DataBytes: int64(cfg.Objects * cfg.ObjectBytes), Configs: configs, Notes: []string{"a note"}}
	res.Ratios = ComputeRatios(configs)
	res.ClosingLine = res.Ratios.ClosingLine()
	md := reporttest.Render(t, func(w io.Writer) error { return WriteMarkdown(w, res) })
	reporttest.CheckContains(t, "markdown", md,
		"# freshcache-bench stall: etcd stopped for 10s",
		"- commit: `abc123`",
		"5000 configmaps of 10240 bytes",
		"| upstream | 400 → 1600 | 4.00× | 200 → 600 | 3.00× | 51 | 900 | 40 | 2 | 0 | 0.80 / 10.40 | 1.50 | cache 500, fallback 1, over_budget 30 |",
		"| upstream-skip-fallback | skipped: Error: unknown flag: --consistent-read-fallback-budget |",
		"What the fallback budget buys: freshcache's growth divided by freshcache-unbounded's is 0.20 for the apiserver and 0.75 for etcd.",
		"| freshcache-reject | 400 → 400 | 1.00× | 200 → 200 | 1.00× |",
		"| never |",
		"\nstall ratios: apiserver-rss-growth=0.30 etcd-rss-growth=0.50 (freshcache/upstream) 5xx=0\n",
		"fallback_objects_in_flight peak: 5000 objects (1.0 LISTs of 5000)",
		"- first 429: 429 Too Many Requests / over budget second line",
		"- a note",
	)
	// Every table row has the header's number of cells.
	var cells []int
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") {
			cells = append(cells, strings.Count(l, "|"))
		}
	}
	for i, n := range cells {
		if n != cells[0] {
			t.Errorf("table row %d has %d separators, the header %d", i, n, cells[0])
		}
	}
}

func TestResultJSON(t *testing.T) {
	r := ranConfig(Freshcache, 1, 1, 0)
	r.Samples = []Sample{{At: 1500 * time.Millisecond, APIServer: 1, Etcd: 2}}
	r.Metrics = []MetricSample{{At: 250 * time.Millisecond, EtcdOK: true, EtcdSentBytes: 9}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"at_ms":1500,"apiserver_rss":1,"etcd_rss":2`, `"at_ms":250`, `"stall_at_ms":40000`, `"recovery_ms":1500`, `"2xx":900`} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s: %s", want, s)
		}
	}
}

func TestPrintable(t *testing.T) {
	in := []byte("k8s\x00\n\f\n\x02v1\x12\x06Status\x12\xcf\x01\n\x06\n\x00\x1a\x00\x12\aFailure\x1a\x9bthe cache did not catch up\"\x0fTooManyRequests")
	want := "Status Failure the cache did not catch up\" TooManyRequests"
	if got := printable(in); got != want {
		t.Errorf("printable = %q, want %q", got, want)
	}
}
