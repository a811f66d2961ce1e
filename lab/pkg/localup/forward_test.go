package localup

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/internal/tcptest"
)

// echoServer answers each line it reads with "echo: " and the line, and
// closes its side when the client half-closes.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	return tcptest.Serve(t, func(c net.Conn) {
		defer func() { _ = c.Close() }()
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, "echo: "+line); err != nil {
				return
			}
		}
	})
}

func TestForwarderCarriesBothWays(t *testing.T) {
	backend := echoServer(t)
	f, err := startForwarder("127.0.0.1:0", backend.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"one line", []string{"hello\n"}},
		{"several lines on one connection", []string{"a\n", "b\n", "c\n"}},
		{"a line larger than a socket buffer", []string{strings.Repeat("x", 1<<20) + "\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", f.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			r := bufio.NewReader(c)
			for _, l := range tc.lines {
				go func() { _, _ = io.WriteString(c, l) }()
				got, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if got != "echo: "+l {
					t.Fatalf("got %d bytes starting %.20q, want the echo of %.20q", len(got), got, l)
				}
			}
			// A half-close reaches the backend, which ends the stream.
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
				t.Fatalf("after half-close: %q, %v; want EOF", rest, err)
			}
		})
	}
}

func TestForwarderWithoutTargetClosesTheClient(t *testing.T) {
	dead := tcptest.DeadAddr(t)
	f, err := startForwarder("127.0.0.1:0", dead)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a forward to nothing; want the connection closed", n)
	}
}

func TestForwarderCloseEndsOpenConnections(t *testing.T) {
	backend := echoServer(t)
	f, err := startForwarder("127.0.0.1:0", backend.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	f.Close() // must return although the client keeps its connection open
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection outlived Close")
	}
	if _, err := net.DialTimeout("tcp", f.Addr().String(), time.Second); err == nil {
		t.Fatal("the forwarder still accepts after Close")
	}
}

func TestForwarderRefusesABusyAddress(t *testing.T) {
	busy := tcptest.Listen(t)
	if _, err := startForwarder(busy.Addr().String(), "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "forwarding") {
		t.Fatalf("got %v, want an error naming the forward", err)
	}
}
