package stall

import (
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestLevels(t *testing.T) {
	// Warm-up 0-1 s, steady 1-4 s, stall from 4 s, end 10 s.
	samples := []Sample{
		{At: ms(500), APIServer: 900, Etcd: 900}, // warm-up: neither level nor peak
		{At: ms(1000), APIServer: 100, Etcd: 50},
		{At: ms(2000), APIServer: 120, Etcd: 0}, // a failed etcd reading is left out
		{At: ms(3000), APIServer: 110, Etcd: 60},
		{At: ms(4000), APIServer: 300, Etcd: 70}, // the stall's first sample is a peak, not pre
		{At: ms(6000), APIServer: 250, Etcd: 240},
		{At: ms(11000), APIServer: 999, Etcd: 999}, // after end
	}
	api, etcd := levels(samples, ms(1000), ms(4000), ms(10000))
	if api.Pre != 110 || api.Peak != 300 || api.Growth != 300.0/110 {
		t.Errorf("apiserver level = %+v, want pre 110, peak 300, growth %v", api, 300.0/110)
	}
	if etcd.Pre != 55 || etcd.Peak != 240 || etcd.Growth != 240.0/55 {
		t.Errorf("etcd level = %+v, want pre 55, peak 240", etcd)
	}
	if g := growth(10, 0); g != 0 {
		t.Errorf("growth with an unknown pre-stall level = %v, want 0", g)
	}
}

func TestClassOf(t *testing.T) {
	for status, want := range map[int]string{200: Class2xx, 206: Class2xx, 429: Class429, 500: Class5xx, 503: Class5xx, 504: Class5xx, 0: ClassOther, 404: ClassOther, 410: ClassOther, 301: ClassOther} {
		if got := classOf(status); got != want {
			t.Errorf("classOf(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestCountsAndLatencies(t *testing.T) {
	reads := []Read{
		{Start: ms(0), Took: ms(5), Class: Class2xx},
		{Start: ms(100), Took: ms(9), Class: Class2xx},
		{Start: ms(200), Took: ms(1), Class: Class429},
		{Start: ms(300), Took: ms(7), Class: Class2xx},
		{Start: ms(400), Took: ms(60000), Class: ClassOther},
		{Start: ms(500), Took: ms(2), Class: Class5xx},
	}
	c := countIn(reads, ms(100), ms(500))
	if c != (Counts{OK: 2, Retry: 1, Other: 1}) || c.Total() != 4 || c.Lost() != 1 {
		t.Errorf("countIn = %+v (total %d, lost %d)", c, c.Total(), c.Lost())
	}
	lat := okLatencies(reads, 0, ms(1000))
	if len(lat) != 3 || lat[0] != ms(5) || lat[2] != ms(9) {
		t.Errorf("okLatencies = %v, want [5ms 7ms 9ms]", lat)
	}
}

func TestRecovery(t *testing.T) {
	fast := func(at int) Read { return Read{Start: ms(at), Took: ms(10), Class: Class2xx} }
	slow := func(at int) Read { return Read{Start: ms(at), Took: ms(5000), Class: Class2xx} }
	retry := func(at int) Read { return Read{Start: ms(at), Took: ms(1), Class: Class429} }
	for _, tc := range []struct {
		name   string
		reads  []Read
		want   time.Duration
		wantOK bool
	}{
		{"immediately", []Read{fast(1000), fast(1001), fast(1002), fast(1003), fast(1004)}, 0, true},
		{"reads before the resume do not count", []Read{fast(10), fast(20), fast(30), fast(40), fast(1100), fast(1200), fast(1300), fast(1400), fast(1500)}, ms(100), true},
		{"a slow read breaks the run", []Read{fast(1000), fast(1100), slow(1200), fast(1300), fast(1400), fast(1500), fast(1600), fast(1700)}, ms(300), true},
		{"a 429 breaks the run", []Read{retry(1000), fast(1200), fast(1300), retry(1350), fast(1400), fast(1500), fast(1600), fast(1700), fast(1800)}, ms(400), true},
		{"ordered by start, not by record order", []Read{fast(1400), fast(1300), fast(1200), fast(1100), slow(1000), fast(1500)}, ms(100), true},
		{"never", []Read{fast(1000), fast(1100), fast(1200), fast(1300), slow(1400)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := recovery(tc.reads, ms(1000), ms(100))
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("recovery = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestSummarizeDeltas(t *testing.T) {
	samples := []MetricSample{
		{At: ms(500), Reads: map[string]float64{OutcomeCache: 10}, EtcdOK: true, EtcdSentBytes: 100},
		{At: ms(1500), Reads: map[string]float64{OutcomeCache: 20}, EtcdOK: true, EtcdSentBytes: 300},
		{At: ms(2500), Reads: nil, EtcdOK: false},                                                                                                                        // neither answered
		{At: ms(3500), Reads: map[string]float64{OutcomeCache: 25, OutcomeFallback: 7}, FallbackObjects: 4000, EtcdOK: true, EtcdSentBytes: 5300, EtcdRangesInFlight: 6}, // after the stall
		{At: ms(4500), Reads: map[string]float64{OutcomeCache: 40, OutcomeFallback: 7}, EtcdOK: true, EtcdSentBytes: 5400},
	}
	tl := Timeline{SteadyFrom: ms(1000), StallAt: ms(2000), ResumeAt: ms(3000), End: ms(5000)}
	var r ConfigResult
	summarize(&r, tl, nil, nil, samples)
	if got := r.OutcomesSteady; len(got) != 1 || got[OutcomeCache] != 10 {
		t.Errorf("steady outcomes = %v, want cache 10", got)
	}
	if got := r.OutcomesFromStall; len(got) != 2 || got[OutcomeCache] != 20 || got[OutcomeFallback] != 7 {
		t.Errorf("outcomes from the stall = %v, want cache 20, fallback 7", got)
	}
	if r.EtcdSentSteady != 200 || r.EtcdSentFromStall != 5100 {
		t.Errorf("etcd sent = %v steady, %v from the stall; want 200, 5100", r.EtcdSentSteady, r.EtcdSentFromStall)
	}
	if r.PeakFallbackObjects != 4000 || r.PeakEtcdRanges != 6 {
		t.Errorf("peaks = %v objects, %v ranges; want 4000, 6", r.PeakFallbackObjects, r.PeakEtcdRanges)
	}
	if r.Recovery != nil {
		t.Errorf("recovery without reads = %v, want none", *r.Recovery)
	}
}

func TestThinning(t *testing.T) {
	samples := []Sample{{At: ms(0), APIServer: 5}, {At: ms(200), APIServer: 9}, {At: ms(999), APIServer: 7}, {At: ms(1000), APIServer: 1}, {At: ms(2500), APIServer: 3}}
	got := thinSamples(samples)
	if len(got) != 3 || got[0].APIServer != 9 || got[1].APIServer != 1 || got[2].APIServer != 3 {
		t.Errorf("thinSamples = %+v, want the highest of each second", got)
	}
	metrics := []MetricSample{
		{At: ms(0), EtcdOK: true, EtcdRangesInFlight: 1},
		{At: ms(250), Reads: map[string]float64{OutcomeCache: 1}}, // the apiserver's: kept
		{At: ms(300), EtcdOK: true, EtcdRangesInFlight: 4},
		{At: ms(600), EtcdOK: false},
		{At: ms(1100), EtcdOK: false},
		{At: ms(1400), EtcdOK: true, EtcdRangesInFlight: 0},
		{At: ms(1700), EtcdOK: false},
	}
	m := thinMetrics(metrics)
	if len(m) != 3 || m[0].EtcdRangesInFlight != 4 || m[1].Reads == nil || !m[2].EtcdOK || m[2].At != ms(1400) {
		t.Errorf("thinMetrics = %+v", m)
	}
}
