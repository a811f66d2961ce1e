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
		fetches: []span{{100 * ms, 101 * ms}, {300 * ms, 303 * ms}},
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

// TestIdleStretchesAndFetchSplit checks the idle accounting on a made-up
// busy timeline with 2 Ps: stretches shorter than MinIdle are goroutine
// switches and do not count, the idle P time weighs each stretch by the
// Ps it left idle, and each fetch splits at the first idle stretch it
// overlaps.
func TestIdleStretchesAndFetchSplit(t *testing.T) {
	us := trace.Time(time.Microsecond)
	a := analysis{
		opts: Options{MinIdle: 20 * time.Microsecond},
		last: 1000 * us,
		busyPts: []busyPoint{
			{0, 2},
			{100 * us, 1}, {150 * us, 2}, // 50µs, one P idle
			{200 * us, 1}, {205 * us, 2}, // 5µs: a switch
			{300 * us, 0}, {350 * us, 1}, {400 * us, 2}, // 100µs: 2 then 1 P idle
			{900 * us, 1}, // open at the end: 100µs, one P idle
		},
		fetches: []span{
			{120 * us, 500 * us}, // starts inside the first stretch
			{160 * us, 290 * us}, // only the switch
			{250 * us, 450 * us}, // idle from 300
			{950 * us, 980 * us}, // inside the last stretch
		},
	}
	spans, idle := a.idleSpans(2)
	wantSpans := []span{{100 * us, 150 * us}, {300 * us, 400 * us}, {900 * us, 1000 * us}}
	if len(spans) != len(wantSpans) {
		t.Fatalf("idle stretches %v, want %v", spans, wantSpans)
	}
	for i := range spans {
		if spans[i] != wantSpans[i] {
			t.Errorf("stretch %d = %v, want %v", i, spans[i], wantSpans[i])
		}
	}
	// 50 + (50×2 + 50×1) + 100 µs of P time.
	if want := 300 * time.Microsecond; idle != want {
		t.Errorf("idle P time %v, want %v", idle, want)
	}
	rep := Report{Procs: 2}
	a.idle(&rep)
	if rep.FetchNoIdle != 1 || rep.FetchToIdle.N != 3 {
		t.Fatalf("%d fetches without idle, %d split; want 1 and 3", rep.FetchNoIdle, rep.FetchToIdle.N)
	}
	if rep.FetchToIdle.Max != 50*time.Microsecond || rep.FetchToIdle.P50 != 0 {
		t.Errorf("start to idle %+v, want max 50µs, median 0", rep.FetchToIdle)
	}
	if rep.IdleToAnswer.Max != 380*time.Microsecond || rep.IdleToAnswer.P50 != 150*time.Microsecond {
		t.Errorf("idle to answer %+v, want max 380µs, median 150µs", rep.IdleToAnswer)
	}
}
