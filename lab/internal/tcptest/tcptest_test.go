package tcptest

import (
	"io"
	"net"
	"testing"
)

func TestServeRunsTheHandlerPerConnection(t *testing.T) {
	ln := Serve(t, func(c net.Conn) { _, _ = io.WriteString(c, "hi"); _ = c.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "hi" {
		t.Fatalf("read %q, %v; want \"hi\", nil", b, err)
	}
}

func TestListenHoldsThePort(t *testing.T) {
	ln := Listen(t)
	if l2, err := net.Listen("tcp", ln.Addr().String()); err == nil {
		_ = l2.Close()
		t.Fatalf("a second listener bound %s, which Listen holds", ln.Addr())
	}
}

func TestDeadAddrRefusesConnections(t *testing.T) {
	if c, err := net.Dial("tcp", DeadAddr(t)); err == nil {
		_ = c.Close()
		t.Fatal("a dial to DeadAddr connected")
	}
}
