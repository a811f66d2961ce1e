package watchlist

import (
	"math"
	"testing"
	"time"
)

func TestParseMachineStat(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	got, ok := parseMachineStat("cpu  100 5 50 1000 20 1 2 3 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	if !ok || got != 161 {
		t.Fatalf("got %v, %v; want 161 (guest is already in user)", got, ok)
	}
	if _, ok := parseMachineStat("intr 1 2 3\n"); ok {
		t.Fatal("a file without the cpu line parsed")
	}
}

func TestCPUStats(t *testing.T) {
	t0 := time.Unix(100, 0)
	before := cpuSample{at: t0, apiserver: 100, etcd: 50, self: 10, busy: 1000}
	after := cpuSample{at: t0.Add(2 * time.Second), apiserver: 300, etcd: 70, self: 50, busy: 1360}
	got := cpuStats(before, after)
	want := CPUStats{APIServer: 1, Etcd: 0.1, Bench: 0.2, Other: 0.5}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"apiserver", got.APIServer, want.APIServer}, {"etcd", got.Etcd, want.Etcd}, {"bench", got.Bench, want.Bench}, {"other", got.Other, want.Other}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if z := cpuStats(after, after); z != (CPUStats{}) {
		t.Errorf("zero-length window: %+v", z)
	}
}
