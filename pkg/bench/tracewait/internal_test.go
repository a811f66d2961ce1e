package tracewait

import (
	"testing"
	"time"

	"golang.org/x/exp/trace"
)

// TestCPUInWindow checks the interval arithmetic behind every CPU figure:
// running spans clipped to a window, summed by class.
func TestCPUInWindow(t *testing.T) {
	a := analysis{gs: map[trace.GoID]*goroutine{
		1: {reader: true, running: []span{{0, 10}, {20, 30}, {40, 50}}},
		2: {gcWorker: true, running: []span{{5, 45}}},
		3: {running: []span{{12, 18}}},
		4: {reader: true}, // never ran
	}}
	for _, tc := range []struct {
		name string
		win  span
		want CPU
	}{
		{"everything", span{0, 100}, CPU{Readers: 30, GCWorkers: 40, Other: 6}},
		{"clipped at both ends", span{8, 22}, CPU{Readers: 4, GCWorkers: 14, Other: 6}},
		{"inside one span", span{21, 22}, CPU{Readers: 1, GCWorkers: 1}},
		{"in a gap", span{10, 12}, CPU{GCWorkers: 2}},
		{"after the end", span{60, 70}, CPU{}},
		{"empty window", span{30, 30}, CPU{}},
		{"reversed window", span{30, 20}, CPU{}},
	} {
		if got := a.cpu(tc.win); got != tc.want {
			t.Errorf("%s: cpu(%v) = %+v, want %+v", tc.name, tc.win, got, tc.want)
		}
	}
}

// TestReportSplitsAndSlowWaits builds the analysis state by hand and checks
// the report: the split of each wait, waits that never blocked, the p99
// threshold, and which slow waits overlap a mark phase.
func TestReportSplitsAndSlowWaits(t *testing.T) {
	ms := trace.Time(time.Millisecond)
	a := analysis{
		opts:  Options{SlowQuantile: 0.9},
		first: 0, last: 1000 * ms,
		gs: map[trace.GoID]*goroutine{
			1: {reader: true, running: []span{{0, 1000 * ms}}},
		},
		marks:   []span{{500 * ms, 600 * ms}},
		fetches: []time.Duration{time.Millisecond, 3 * time.Millisecond},
	}
	// Nine short waits released after 1 ms, running 1 ms later; one never
	// blocked; one long wait inside the mark phase: 20 ms to release, then
	// 30 ms to run.
	for i := range 9 {
		s := trace.Time(i*10) * ms
		a.waits = append(a.waits, wait{g: 1, start: s, release: s + ms, end: s + 2*ms})
	}
	a.waits = append(a.waits, wait{g: 1, start: 200 * ms, release: 200 * ms, end: 201 * ms})
	a.waits = append(a.waits, wait{g: 1, start: 550 * ms, release: 570 * ms, end: 600 * ms})
	rep := a.report()

	if rep.Total.N != 11 || rep.NotBlocked != 1 {
		t.Fatalf("waits %d, not blocked %d; want 11, 1", rep.Total.N, rep.NotBlocked)
	}
	if rep.Total.Max != 50*time.Millisecond || rep.UntilRelease.Max != 20*time.Millisecond || rep.ReleaseToRun.Max != 30*time.Millisecond {
		t.Errorf("max total/until/to-run = %v/%v/%v, want 50ms/20ms/30ms", rep.Total.Max, rep.UntilRelease.Max, rep.ReleaseToRun.Max)
	}
	if rep.Total.P50 != 2*time.Millisecond {
		t.Errorf("median wait %v, want 2ms", rep.Total.P50)
	}
	// The 0.9 quantile of 11 waits is the 10th smallest (2 ms); the waits at
	// or above it are the nine short ones and the long one.
	if rep.Slow.Threshold != 2*time.Millisecond || rep.Slow.N != 10 || rep.Slow.InGCMark != 1 {
		t.Errorf("slow %+v, want threshold 2ms, 10 waits, 1 in a mark phase", rep.Slow)
	}
	if rep.GCMark != 100*time.Millisecond || rep.Span != time.Second || rep.Fetch.Max != 3*time.Millisecond {
		t.Errorf("mark %v, span %v, longest fetch %v", rep.GCMark, rep.Span, rep.Fetch.Max)
	}
	if rep.CPU.Readers != time.Second {
		t.Errorf("reader CPU %v, want 1s", rep.CPU.Readers)
	}
}
