package storage

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/diag/tracewait"
)

// TestTraceCountsEveryFreshnessWait traces real consistent and rv=0 LISTs
// through the freshcache pod storage on an embedded etcd, and checks that
// tracewait finds exactly one wait region per consistent LIST (rv=0 does
// not wait: the storage bench runs rv=0 with FreshResourceVersionZero off) and at least one
// revision fetch, never more than one per read. This ties the region names
// the cache emits to the ones the analysis reads.
func TestTraceCountsEveryFreshnessWait(t *testing.T) {
	shape := Shape{Pods: 100, Nodes: 5}
	ctx, env := startEnvUnlessShort(t, "a pod storage", shape, 2*time.Minute)
	b, err := env.newPodBackend(ctx, BackendFreshcache, time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.destroy()

	const (
		clients   = 4
		perClient = 10
	)
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("tracing unavailable: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient*2)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 1))
			for range perClient {
				for _, rv := range []string{RVConsistent, RVZero} {
					res, err := env.op(ctx, b, ScenarioListNode, rv, r)
					if err == nil && res.wrong {
						t.Errorf("rv=%s: %d items, not the node's pods", rv, res.items)
					}
					if err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	trace.Stop()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	rep, err := tracewait.Analyze(&buf, tracewait.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := clients * perClient; rep.Total.N != want {
		t.Errorf("%d wait regions, want one per consistent LIST: %d", rep.Total.N, want)
	}
	if rep.Fetch.N < 1 || rep.Fetch.N > rep.Total.N {
		t.Errorf("%d fetch regions for %d waits", rep.Fetch.N, rep.Total.N)
	}
	if rep.NotBlocked == rep.Total.N {
		t.Errorf("no reader ever blocked for a fetch")
	}
	// Fetches are issued only for waiting reads, and a read is released
	// only after a fetch issued after it arrived has answered: the reads
	// the longest fetch covered waited longer than it did.
	if rep.UntilRelease.Max < rep.Fetch.Max {
		t.Errorf("longest wait until release %v, shorter than the longest fetch %v", rep.UntilRelease.Max, rep.Fetch.Max)
	}
}

// TestRunWritesOneTracePerRow checks Config.TraceDir: every measured row
// gets its own trace file, named after the row, holding exactly one wait
// region per consistent op the row counted (the warm-up is not traced).
func TestRunWritesOneTracePerRow(t *testing.T) {
	shape := Shape{Pods: 100, Nodes: 5}
	ctx, env := startEnvUnlessShort(t, "a pod storage", shape, 2*time.Minute)
	dir := t.TempDir()
	want := []string{"freshcache-list-node-consistent-c2-1.trace", "freshcache-list-node-consistent-c2-2.trace"}
	rows := runListNodeRows(ctx, t, env, shape, []string{RVConsistent, RVConsistent}, 2, func(c *Config) { c.TraceDir = dir }, want)
	for i, r := range rows {
		if filepath.Base(r.Trace) != want[i] || filepath.Dir(r.Trace) != dir {
			t.Errorf("row %d traced to %q, want %s in %s", i, r.Trace, want[i], dir)
			continue
		}
		f, err := os.Open(r.Trace)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := tracewait.Analyze(f, tracewait.Options{})
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: %v", r.Trace, err)
		}
		if int64(rep.Total.N) != r.Ops || r.Ops == 0 {
			t.Errorf("%s: %d wait regions for %d ops", want[i], rep.Total.N, r.Ops)
		}
		if !strings.Contains(strings.Join(rowCells(r), " "), "traced (slower)") {
			t.Errorf("row %d does not say it was traced: %v", i, rowCells(r))
		}
	}
}

// runListNodeRows runs freshcache's LIST by node on env, one row per rv at
// clients clients, each a second long (long enough for consistent reads to
// complete on a busy machine; see TestHarnessAttachedEtcd) after a 50 ms
// warm-up, under 50 lease writes/s; set adds what the test is about to the
// Config. It fails t unless Run succeeds with one row per name in want.
func runListNodeRows(ctx context.Context, t *testing.T, env *Env, shape Shape, rvs []string, clients int, set func(*Config), want []string) []Row {
	t.Helper()
	cfg := Config{
		Shape:       shape,
		Backends:    []string{BackendFreshcache},
		Scenarios:   []string{ScenarioListNode},
		RVs:         rvs,
		Concurrency: []int{clients},
		Duration:    time.Second,
		Warmup:      50 * time.Millisecond,
		Load:        Load{LeaseWritesPerSec: 50},
	}
	set(&cfg)
	rows, err := Run(ctx, env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(rows), len(want))
	}
	return rows
}
