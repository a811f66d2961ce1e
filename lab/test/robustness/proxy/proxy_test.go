package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/internal/tcptest"
)

// echo serves a TCP echo on loopback until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	return tcptest.Serve(t, func(c net.Conn) { _, _ = io.Copy(c, c); _ = c.Close() }).Addr().String()
}

func start(t *testing.T, sniff bool) *Proxy {
	t.Helper()
	p, err := New(Options{Target: echo(t), SniffSender: sniff}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// startWarm starts a proxy that does not sniff and dials it, and fails t
// unless line makes the round trip through it.
func startWarm(t *testing.T, line string) (*Proxy, net.Conn, *bufio.Reader) {
	t.Helper()
	p := start(t, false)
	c, r := dial(t, p, "")
	if _, err := roundTrip(c, r, line); err != nil {
		t.Fatal(err)
	}
	return p, c, r
}

func dial(t *testing.T, p *Proxy, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if head != "" {
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
	}
	return c, bufio.NewReader(c)
}

// roundTrip writes a line and reads it back; the deadline only bounds a
// hang, it asserts nothing about speed.
func roundTrip(c net.Conn, r *bufio.Reader, line string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestForwardsUntilBlocked(t *testing.T) {
	p := start(t, false)
	c, r := dial(t, p, "")
	if got, err := roundTrip(c, r, "hello"); err != nil || got != "hello\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	p.Block(Everyone)
	if _, err := roundTrip(c, r, "again"); err == nil {
		t.Fatal("a blocked connection still forwards")
	}
	c2, r2 := dial(t, p, "")
	if _, err := roundTrip(c2, r2, "new"); err == nil {
		t.Fatal("a new connection is accepted while blocked")
	}
	p.Heal()
	c3, r3 := dial(t, p, "")
	if got, err := roundTrip(c3, r3, "healed"); err != nil || got != "healed\n" {
		t.Fatalf("after Heal: %q, %v", got, err)
	}
}

func TestStallHoldsBytesWithoutClosing(t *testing.T) {
	p, c, r := startWarm(t, "warm")
	p.Stall()
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	// Nothing may come back while stalled (however long we look), and the
	// connection stays open.
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if got, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read during a stall: %q, %v; want a deadline, no data, no close", got, err)
	}
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after the stall: %q, %v; want the held bytes", got, err)
	}
}

func TestResetCutsLiveConnectionsOnly(t *testing.T) {
	p, c, r := startWarm(t, "a")
	p.Reset()
	if _, err := roundTrip(c, r, "b"); err == nil {
		t.Fatal("connection survived Reset")
	}
	c2, r2 := dial(t, p, "")
	if got, err := roundTrip(c2, r2, "c"); err != nil || got != "c\n" {
		t.Fatalf("new connection after Reset: %q, %v", got, err)
	}
}

// With SniffSender, Block(id) cuts only the connections whose first
// request says X-Server-From: id, as etcd's raft transport sends it.
func TestBlockOneSender(t *testing.T) {
	p := start(t, true)
	const headA = "POST /raft HTTP/1.1\r\nX-Server-From: aaa\r\n\r\n"
	const headB = "POST /raft HTTP/1.1\r\nX-Server-From: bbb\r\n\r\n"
	a, ra := dial(t, p, headA)
	b, rb := dial(t, p, headB)
	for _, x := range []struct {
		c net.Conn
		r *bufio.Reader
	}{{a, ra}, {b, rb}} {
		// The echo returns the replayed request head first.
		_ = x.c.SetDeadline(time.Now().Add(30 * time.Second))
		for {
			line, err := x.r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "\r\n" {
				break
			}
		}
	}
	p.Block("aaa")
	if _, err := roundTrip(a, ra, "x"); err == nil {
		t.Fatal("sender aaa still forwarded after Block(aaa)")
	}
	if got, err := roundTrip(b, rb, "y"); err != nil || got != "y\n" {
		t.Fatalf("sender bbb after Block(aaa): %q, %v", got, err)
	}
}
