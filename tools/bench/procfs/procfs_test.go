package procfs

import (
	"os"
	"testing"
)

func TestParseStatTicks(t *testing.T) {
	for _, c := range []struct {
		stat string
		want float64
		ok   bool
	}{
		// utime 1500, stime 250 (fields 14 and 15).
		{"4242 (kube-apiserver) S 1 4242 4242 0 -1 4194560 123 0 0 0 1500 250 0 0 20 0 30 0 100 2000000 5000", 1750, true},
		// A command name with a space and a ')' inside.
		{"7 (a b) c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 1 1", 7, true},
		{"7 (short) R 1 2", 0, false},
		{"garbage", 0, false},
		// The cases of watchlist's former copy of this parser.
		{"42 (kube-apiserver) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 1000 0 0", 300, true},
		{"7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0 5 0 0", 33, true},
		{"7 (x) R 1 7 7 0 -1 0 0 0 0 0 a b 0", 0, false},
	} {
		got, ok := parseStatTicks(c.stat)
		if got != c.want || ok != c.ok {
			t.Errorf("parseStatTicks(%q) = %v, %v; want %v, %v", c.stat, got, ok, c.want, c.ok)
		}
	}
}

func TestParseStatusKB(t *testing.T) {
	apiserver := "Name:\tkube-apiserver\nVmHWM:\t  812345 kB\nVmRSS:\t  523456 kB\nRssAnon:\t  400000 kB\n"
	// The status stall's former copy of this parser was tested with.
	another := "Name:\tkube-apiserver\nVmPeak:\t 2000 kB\nVmHWM:\t  900000 kB\nVmRSS:\t  812345 kB\nThreads:\t20\n"
	for _, c := range []struct {
		status, key string
		want        float64
	}{
		{apiserver, "VmRSS:", 523456},
		{apiserver, "VmHWM:", 812345},
		{apiserver, "VmSwap:", 0}, // absent
		{another, "VmRSS:", 812345},
		{another, "VmHWM:", 900000},
		{another, "VmSwap:", 0},
	} {
		if got := parseStatusKB(c.status, c.key); got != c.want {
			t.Errorf("parseStatusKB(%q, %q) = %v, want %v", c.status, c.key, got, c.want)
		}
	}
}

func TestStatusBytesOfThisProcess(t *testing.T) {
	if got := StatusBytes(os.Getpid(), "VmRSS:"); got <= 0 || got%1024 != 0 {
		t.Errorf("StatusBytes(self, VmRSS:) = %d, want a positive whole number of kB", got)
	}
	if got := StatusBytes(os.Getpid(), "NoSuchKey:"); got != 0 {
		t.Errorf("StatusBytes of an absent key = %d, want 0", got)
	}
}
