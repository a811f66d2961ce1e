package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports below this are left alone: well-known and registered services.
const lowestPort = 10000

// Port returns a port on host that nothing listens on now. The caller
// binds it later, so something else may take it meanwhile. To make that
// unlikely it picks, at random, a port outside the kernel's ephemeral range:
// the kernel hands those out as source ports of outgoing connections, and a
// port freed by asking for ":0" was seen taken by one before the caller's
// bind (a clean-clone CI run, with test packages connecting in parallel).
// Only when no such port is found does it fall back to a kernel-chosen one.
func Port(host string) (int, error) {
	lo, hi := ephemeralRange()
	for range 64 {
		p := outsideRange(rand.IntN, lo, hi)
		if p == 0 {
			break // the ephemeral range covers everything above lowestPort
		}
		if Check(host, p) == nil {
			return p, nil
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("freeport: finding a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralRange is the kernel's range of source ports for outgoing
// connections (Linux: net.ipv4.ip_local_port_range), or Linux's default
// where it cannot be read.
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if lo, hi, ok := parseRange(string(b)); ok {
			return lo, hi
		}
	}
	return 32768, 60999
}

// parseRange reads "LO HI" (any whitespace); ok is false unless
// 1 <= LO <= HI <= 65535.
func parseRange(s string) (lo, hi int, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo < 1 || lo > hi || hi > 65535 {
		return 0, 0, false
	}
	return lo, hi, true
}

// outsideRange draws a port from [lowestPort, 65535] minus [lo, hi], using
// intN (rand.IntN); 0 when nothing is left.
func outsideRange(intN func(int) int, lo, hi int) int {
	below := max(0, min(lo, 65536)-lowestPort) // lowestPort .. lo-1
	above := max(0, 65535-max(hi, lowestPort-1))
	if below+above == 0 {
		return 0
	}
	n := intN(below + above)
	if n < below {
		return lowestPort + n
	}
	return max(hi, lowestPort-1) + 1 + (n - below)
}

// Addr is Port as a host:port address, for listeners configured by
// address (etcd's client and peer URLs).
func Addr(host string) (string, error) {
	p, err := Port(host)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// Check returns the error of listening on host:port now, nil if it could.
func Check(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}
