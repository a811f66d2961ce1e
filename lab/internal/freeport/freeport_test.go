package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"32768\t60999\n", 32768, 60999, true},
		{"1024 65535", 1024, 65535, true},
		{"40000 40000", 40000, 40000, true},
		{"60999 32768", 0, 0, false},
		{"0 100", 0, 0, false},
		{"1 70000", 0, 0, false},
		{"32768", 0, 0, false},
		{"a b", 0, 0, false},
		{"", 0, 0, false},
	} {
		lo, hi, ok := parseRange(tc.in)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("parseRange(%q) = %d, %d, %v; want %d, %d, %v", tc.in, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// TestOutsideRange checks the ends of what outsideRange can draw: the
// lowest and the highest choice of intN, and ranges that leave one side or
// nothing.
func TestOutsideRange(t *testing.T) {
	first := func(int) int { return 0 }
	last := func(n int) int { return n - 1 }
	for _, tc := range []struct {
		name                string
		lo, hi              int
		wantFirst, wantLast int
	}{
		{"linux default", 32768, 60999, 10000, 65535},
		{"room below only", 20000, 65535, 10000, 19999},
		{"room above only", 1024, 50000, 50001, 65535},
		{"range below lowestPort", 1024, 5000, 10000, 65535},
		{"one port above", 1024, 65534, 65535, 65535},
		{"no room", 1024, 65535, 0, 0},
	} {
		if got := outsideRange(first, tc.lo, tc.hi); got != tc.wantFirst {
			t.Errorf("%s: first choice %d, want %d", tc.name, got, tc.wantFirst)
		}
		if got := outsideRange(last, tc.lo, tc.hi); got != tc.wantLast {
			t.Errorf("%s: last choice %d, want %d", tc.name, got, tc.wantLast)
		}
	}
}

// TestPortAvoidsEphemeralRange: the port is free to listen on and, with
// room outside the kernel's ephemeral range, outside it.
func TestPortAvoidsEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange()
	for range 20 {
		p, err := Port("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo && p <= hi && outsideRange(func(int) int { return 0 }, lo, hi) != 0 {
			t.Errorf("port %d inside the ephemeral range %d-%d", p, lo, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		_ = l.Close()
	}
}

func TestAddrIsAFreePortOnHost(t *testing.T) {
	addr, err := Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr = %q (%v), want 127.0.0.1:PORT", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 {
		t.Fatalf("Addr = %q: port %q", addr, port)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s not free: %v", addr, err)
	}
	_ = l.Close()
}
