package netpollfloor

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

// TestMeasureTimesBothPaths runs a small load and checks that every
// round trip of both kinds was timed and summarised, and that the defaults
// were filled in. It asserts no speed: that is the benchmark's business.
func TestMeasureTimesBothPaths(t *testing.T) {
	r, err := Measure(context.Background(), Options{Busy: 4, Samples: 50, Warmup: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Samples != 50 {
		t.Errorf("Samples = %d, want 50", r.Samples)
	}
	if r.Options.Work != 150*time.Microsecond || r.Options.GatePeriod != 500*time.Microsecond || r.Options.Busy != 4 {
		t.Errorf("options not defaulted as documented: %+v", r.Options)
	}
	for name, q := range map[string]Quantiles{"tcp": r.TCP, "chan": r.Chan} {
		if q.P50 <= 0 || q.P50 > q.P90 || q.P90 > q.P99 {
			t.Errorf("%s quantiles not positive and ordered: %+v", name, q)
		}
	}
}

func TestMeasureRejectsNegativeOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"busy":    {Busy: -1},
		"work":    {Work: -time.Microsecond},
		"gate":    {GatePeriod: -time.Microsecond},
		"samples": {Samples: -1},
		"pause":   {Pause: -time.Microsecond},
		"warmup":  {Warmup: -time.Millisecond},
	} {
		if _, err := Measure(context.Background(), o); err == nil {
			t.Errorf("%s: negative option accepted", name)
		}
	}
}

func TestMeasureStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Measure(ctx, Options{Busy: 2, Samples: 1000})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestQuantiles(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name string
		in   []time.Duration
		want Quantiles
	}{
		{"empty", nil, Quantiles{}},
		{"one", []time.Duration{ms(3)}, Quantiles{ms(3), ms(3), ms(3)}},
		{"unsorted hundred", func() []time.Duration {
			var ds []time.Duration
			for i := 100; i >= 1; i-- {
				ds = append(ds, ms(i))
			}
			return ds
		}(), Quantiles{P50: ms(50), P90: ms(90), P99: ms(99)}},
	}
	for _, tt := range tests {
		if got := quantiles(tt.in); got != tt.want {
			t.Errorf("%s: quantiles = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestWriteMarkdown(t *testing.T) {
	if err := WriteMarkdown(&bytes.Buffer{}, nil); err == nil {
		t.Error("no results: want an error")
	}
	o := Options{Busy: 32, Work: 150 * time.Microsecond, GatePeriod: 500 * time.Microsecond, Pause: 200 * time.Microsecond}
	var b bytes.Buffer
	err := WriteMarkdown(&b, []Result{{
		Options: o, Samples: 10,
		TCP:  Quantiles{P50: 1500 * time.Microsecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond},
		Chan: Quantiles{P50: time.Microsecond, P90: 2 * time.Microsecond, P99: 3 * time.Microsecond},
	}})
	if err != nil {
		t.Fatal(err)
	}
	reporttest.CheckContains(t, "markdown", b.String(),
		"burns 150µs of CPU", "every 500µs", "10 round trips",
		"| 32 | 1.500 ms | 2.000 ms | 3.000 ms | 0.001 ms | 0.002 ms | 0.003 ms | 1500× |",
	)
}
