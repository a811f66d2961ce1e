package tracewait

import (
	"bytes"
	"context"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

const (
	testWait  = "test.wait"
	testFetch = "test.fetch"
)

// TestAnalyzeSplitsWaits traces a small program shaped like the cache: eight
// readers block inside a wait region until a driver, after a fetch region
// of known length, releases them all; one more reader never blocks. The
// analysis must find every region and never report less than the sleeps it
// knows happened. Tracing allocates, so the unblocked reader sometimes
// parks on a GC assist inside its region (about one run in a hundred on two
// busy cores); that must not count as its release.
func TestAnalyzeSplitsWaits(t *testing.T) {
	const (
		readers = 8
		parked  = 20 * time.Millisecond // after every reader registered
		fetch   = 10 * time.Millisecond
	)
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("tracing unavailable: %v", err)
	}
	ctx := context.Background()
	release := make(chan struct{})
	var registered, done sync.WaitGroup
	registered.Add(readers)
	done.Add(readers + 1)
	for range readers {
		go func() {
			defer done.Done()
			r := trace.StartRegion(ctx, testWait)
			registered.Done()
			<-release
			r.End()
		}()
	}
	go func() { // released at once: never blocks inside its region
		defer done.Done()
		trace.StartRegion(ctx, testWait).End()
	}()
	registered.Wait()
	time.Sleep(parked)
	trace.WithRegion(ctx, testFetch, func() { time.Sleep(fetch) })
	runtime.GC() // one mark phase the analysis must see
	close(release)
	done.Wait()
	trace.Stop()

	rep, err := Analyze(&buf, Options{WaitRegion: testWait, FetchRegion: testFetch})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.N != readers+1 || rep.NotBlocked != 1 {
		t.Fatalf("waits %d (not blocked %d), want %d (1)", rep.Total.N, rep.NotBlocked, readers+1)
	}
	if rep.Fetch.N != 1 || rep.Fetch.Max < fetch {
		t.Errorf("fetches %d, longest %v; want 1 of at least %v", rep.Fetch.N, rep.Fetch.Max, fetch)
	}
	// The median wait is a blocked reader's: it waited for the park and the
	// fetch before the release.
	if rep.UntilRelease.P50 < parked+fetch {
		t.Errorf("median until release %v, want at least %v", rep.UntilRelease.P50, parked+fetch)
	}
	if rep.Total.Max < rep.UntilRelease.Max || rep.Total.P50 < rep.UntilRelease.P50 {
		t.Errorf("a part exceeds the whole: total %+v, until release %+v", rep.Total, rep.UntilRelease)
	}
	if rep.GCMark <= 0 {
		t.Errorf("no GC mark phase found after runtime.GC()")
	}
	if rep.CPU.Readers <= 0 || rep.CPU.Total() > rep.Span*time.Duration(max(rep.Procs, 1)) {
		t.Errorf("CPU %+v over a span of %v on %d Ps", rep.CPU, rep.Span, rep.Procs)
	}
	// Nothing ran during the fetch's sleep: the process sat idle, and the
	// fetch saw it.
	if rep.Idle < fetch || rep.FetchNoIdle != 0 || rep.FetchToIdle.N != 1 || rep.IdleToAnswer.Max > rep.Fetch.Max {
		t.Errorf("idle %v; fetch split %+v / %+v, %d without idle", rep.Idle, rep.FetchToIdle, rep.IdleToAnswer, rep.FetchNoIdle)
	}
	if rep.Slow.N < 1 || rep.Slow.Threshold < rep.Total.P50 {
		t.Errorf("slow waits %+v", rep.Slow)
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + md.String())
	reporttest.CheckContains(t, "markdown", md.String(), "| arrival to release | 9 |", "| revision fetch | 1 |", "GC mark phase")
}

func TestMarkdownWithoutWaits(t *testing.T) {
	var md strings.Builder
	rep := Report{Span: time.Second, Procs: 2, GCMark: 250 * time.Millisecond}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	got := md.String()
	reporttest.CheckContains(t, "markdown", got, "No freshness waits", "25% of the span")
	if strings.Contains(got, "| part |") || strings.Contains(got, "never blocked") || strings.Contains(got, "Slowest") {
		t.Errorf("markdown describes waits that are not there:\n%s", got)
	}
}

func TestAnalyzeRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		opts Options
	}{
		{"not a trace", "hello", Options{}},
		{"empty", "", Options{}},
		{"quantile too large", "", Options{SlowQuantile: 1}},
		{"negative quantile", "", Options{SlowQuantile: -0.5}},
	} {
		if _, err := Analyze(strings.NewReader(tc.in), tc.opts); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestQuantileNearestRank(t *testing.T) {
	s := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.9, 9}, {0.99, 10}, {0.01, 1}} {
		if got := quantile(s, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("quantile of nothing = %v", got)
	}
}
