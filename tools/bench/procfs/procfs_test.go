package procfs

import (
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
	status := "Name:\tkube-apiserver\nVmHWM:\t  812345 kB\nVmRSS:\t  523456 kB\nRssAnon:\t  400000 kB\n"
	if got := parseStatusKB(status, "VmRSS:"); got != 523456 {
		t.Errorf("VmRSS = %v", got)
	}
	if got := parseStatusKB(status, "VmHWM:"); got != 812345 {
		t.Errorf("VmHWM = %v", got)
	}
	if got := parseStatusKB(status, "VmSwap:"); got != 0 {
		t.Errorf("absent key = %v, want 0", got)
	}
}
