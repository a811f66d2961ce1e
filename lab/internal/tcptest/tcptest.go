package tcptest

import (
	"net"
	"testing"
)

// Listen returns a loopback listener that stays open, holding its port,
// until the test ends.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// Serve is Listen with an accept loop that runs handle on each connection
// in a goroutine of its own; handle owns the connection and closes it.
func Serve(t testing.TB, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln := Listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln
}

// DeadAddr returns a loopback address where nothing listens any more: a
// port the kernel handed out, whose listener is already closed.
func DeadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
