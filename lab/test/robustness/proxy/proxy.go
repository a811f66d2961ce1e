package proxy

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// Everyone matches every sender in Block.
const Everyone = "*"

// Options configure a Proxy.
type Options struct {
	// Target is the address connections are forwarded to.
	Target string
	// SniffSender reads the X-Server-From header of the first HTTP request
	// on each connection (etcd peer traffic).
	SniffSender bool
}

// Proxy forwards TCP connections from Addr() to Options.Target.
type Proxy struct {
	opts Options
	ln   net.Listener
	done chan struct{}

	// mu guards the fault settings and the live connection set.
	mu struct {
		sync.Mutex
		blocked map[string]bool // sender IDs; Everyone blocks all
		stalled bool            // forward nothing, close nothing
		unstall chan struct{}   // closed when a stall ends
		delay   time.Duration   // added before each forwarded chunk
		dropP   float64         // probability a chunk resets its connection
		rng     *rand.Rand
		conns   map[*link]struct{}
		closed  bool
	}
}

// link is one proxied connection pair.
type link struct {
	from      string
	down, up  net.Conn
	closeOnce sync.Once
}

func (l *link) close() {
	l.closeOnce.Do(func() {
		_ = l.down.Close()
		if l.up != nil {
			_ = l.up.Close()
		}
	})
}

// New listens on a free loopback port and starts forwarding. seed makes the
// drop decisions reproducible (given the same chunking).
func New(opts Options, seed uint64) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{opts: opts, ln: ln, done: make(chan struct{})}
	p.mu.blocked = map[string]bool{}
	p.mu.conns = map[*link]struct{}{}
	p.mu.unstall = make(chan struct{})
	p.mu.rng = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	go p.accept()
	return p, nil
}

// Addr is the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is "http://" + Addr().
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// Close stops accepting and cuts every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	<-p.done
	p.mu.Lock()
	p.mu.closed = true
	if p.mu.stalled {
		p.mu.stalled = false
		close(p.mu.unstall)
	}
	p.mu.Unlock()
	p.Reset()
}

func (p *Proxy) accept() {
	defer close(p.done)
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	l := &link{down: c}
	var head string
	var src io.Reader = c
	if p.opts.SniffSender {
		br := bufio.NewReader(c)
		tp := textproto.NewReader(br)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		requestLine, err := tp.ReadLine()
		if err != nil {
			_ = c.Close()
			return
		}
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			_ = c.Close()
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		l.from = hdr.Get("X-Server-From")
		var b strings.Builder
		b.WriteString(requestLine + "\r\n")
		for k, vs := range hdr {
			for _, v := range vs {
				b.WriteString(k + ": " + v + "\r\n")
			}
		}
		b.WriteString("\r\n")
		head = b.String()
		src = br
	}
	p.mu.Lock()
	refused := p.mu.closed || p.mu.blocked[Everyone] || (l.from != "" && p.mu.blocked[l.from])
	p.mu.Unlock()
	if refused {
		_ = c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.opts.Target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	l.up = up
	p.mu.Lock()
	if p.mu.closed || p.mu.blocked[Everyone] || (l.from != "" && p.mu.blocked[l.from]) {
		p.mu.Unlock()
		l.close()
		return
	}
	p.mu.conns[l] = struct{}{}
	p.mu.Unlock()
	defer p.forget(l)

	if head != "" {
		if _, err := io.WriteString(up, head); err != nil {
			return
		}
	}
	go func() {
		p.pipe(l, up, src)
		l.close()
	}()
	p.pipe(l, c, up)
	l.close()
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.mu.conns, l)
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, applying the current faults to
// every chunk.
func (p *Proxy) pipe(l *link, dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate(l) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// gate applies stall, delay and drop to one chunk. It reports false when the
// connection must end.
func (p *Proxy) gate(l *link) bool {
	for {
		p.mu.Lock()
		stalled, unstall := p.mu.stalled, p.mu.unstall
		delay := p.mu.delay
		drop := p.mu.dropP > 0 && p.mu.rng.Float64() < p.mu.dropP
		p.mu.Unlock()
		if stalled {
			<-unstall // a blackhole: hold the bytes, keep the socket open
			continue
		}
		if drop {
			return false
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			<-t.C
		}
		return true
	}
}

// Block refuses new connections from sender (Everyone: from all) and cuts
// the live ones.
func (p *Proxy) Block(sender string) { p.cut(sender, true) }

// cut closes the live connections from sender (Everyone: all of them) and,
// with block, refuses sender's new ones from the same moment. The links
// are closed after the lock is released, so that no close waits under it.
func (p *Proxy) cut(sender string, block bool) {
	p.mu.Lock()
	if block {
		p.mu.blocked[sender] = true
	}
	var victims []*link
	for l := range p.mu.conns {
		if sender == Everyone || l.from == sender {
			victims = append(victims, l)
		}
	}
	p.mu.Unlock()
	for _, l := range victims {
		l.close()
	}
}

// Stall holds every byte in flight on every connection, new ones too,
// without closing anything: peers see a silent network.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.stalled {
		p.mu.stalled = true
		p.mu.unstall = make(chan struct{})
	}
}

// Delay adds d before every forwarded chunk; 0 turns it off.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.mu.delay = d
	p.mu.Unlock()
}

// Drop resets a connection with probability prob for each chunk; 0 turns
// it off.
func (p *Proxy) Drop(prob float64) {
	p.mu.Lock()
	p.mu.dropP = prob
	p.mu.Unlock()
}

// Reset cuts every live connection once; new ones are accepted.
func (p *Proxy) Reset() { p.cut(Everyone, false) }

// Heal removes every fault. Connections cut before stay cut.
func (p *Proxy) Heal() {
	p.mu.Lock()
	clear(p.mu.blocked)
	if p.mu.stalled {
		p.mu.stalled = false
		close(p.mu.unstall)
	}
	p.mu.delay = 0
	p.mu.dropP = 0
	p.mu.Unlock()
}
