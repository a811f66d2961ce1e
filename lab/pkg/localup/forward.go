package localup

// The path from pods to the apiserver. Pods reach the apiserver through the
// kubernetes Service, whose endpoint is the node IP at the first
// apiserver's port; the apiserver itself listens on --bind-address
// (loopback) only, as upstream's kube-apiserver does with one address.
// local-up carries each connection from nodeIP:port to bindAddress:port
// with a plain TCP forwarder of its own: TLS passes through untouched (the
// serving certificate names the node IP), and the product binary needs no
// flag for a second listen address.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// forwarder accepts on one address and joins every connection to a new
// one to target. Close stops it and every connection it carries.
type forwarder struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// forwardDialTimeout bounds the dial to the target: the apiserver answers
// on loopback or not at all.
const forwardDialTimeout = 5 * time.Second

// startForwarder listens on listen ("ip:port") and forwards to target.
func startForwarder(listen, target string) (*forwarder, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("localup: forwarding %s to the apiserver at %s: %w", listen, target, err)
	}
	f := &forwarder{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the address the forwarder accepts on.
func (f *forwarder) Addr() net.Addr { return f.ln.Addr() }

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (too many open files): back off
			// briefly rather than spin.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !f.track(c) {
			_ = c.Close()
			return
		}
		f.wg.Add(1)
		go f.join(c)
	}
}

// track records c so that Close can end it; false once closed.
func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.Close()
}

// join copies both ways between the accepted connection and a new one to
// the target until either side ends; then both close.
func (f *forwarder) join(in net.Conn) {
	defer f.wg.Done()
	defer f.untrack(in)
	out, err := net.DialTimeout("tcp", f.target, forwardDialTimeout)
	if err != nil {
		return // the client sees its connection closed, as with no listener
	}
	if !f.track(out) {
		_ = out.Close()
		return
	}
	defer f.untrack(out)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Pass the half-close on, so a client that shuts down its
		// writing side still reads the answer.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}

// Close stops accepting, ends every connection and waits for the
// forwarder's goroutines.
func (f *forwarder) Close() {
	f.mu.Lock()
	f.closed = true
	conns := make([]net.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	_ = f.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	f.wg.Wait()
}
