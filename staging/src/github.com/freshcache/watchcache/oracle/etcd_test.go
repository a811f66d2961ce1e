package oracle

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Embedded etcd for the oracle's tests. Real servers, no mocks.

const startTimeout = 60 * time.Second

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpURL(addr string) url.URL { return url.URL{Scheme: "http", Host: addr} }

func baseConfig(t testing.TB, name string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = t.TempDir()
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	clientURL := httpURL(freeAddr(t))
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	return cfg
}

func waitReady(t testing.TB, e *embed.Etcd) {
	t.Helper()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(startTimeout):
		e.Close()
		t.Fatalf("etcd %s did not become ready within %v", e.Config().Name, startTimeout)
	}
}

func newClient(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// single is a one-member cluster. stop may be called any number of times.
type single struct {
	endpoint string
	stop     func()
}

// startEtcd starts a one-member cluster and returns it with a client. Both
// are closed when the test ends; closing them earlier is fine.
func startEtcd(t testing.TB) (single, *clientv3.Client) {
	t.Helper()
	cfg := baseConfig(t, "single")
	peerURL := httpURL(freeAddr(t))
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	waitReady(t, e)
	endpoint := cfg.AdvertiseClientUrls[0].String()
	return single{endpoint: endpoint, stop: stop}, newClient(t, endpoint)
}

func put(t testing.TB, c *clientv3.Client, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Put(ctx, key, "v")
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

// cluster is a 3-member etcd whose peer traffic runs through proxies, one in
// front of each member's peer listener, so that a test can cut a member off
// in both directions.
type cluster struct {
	members []*embed.Etcd
	proxies []*peerProxy
}

func startCluster(t testing.TB) *cluster {
	t.Helper()
	const n = 3
	cl := &cluster{}
	cfgs := make([]*embed.Config, n)
	var initial []string
	for i := range n {
		cfg := baseConfig(t, fmt.Sprintf("m%d", i))
		listen := freeAddr(t)
		p := newPeerProxy(t, listen)
		cl.proxies = append(cl.proxies, p)
		cfg.ListenPeerUrls = []url.URL{httpURL(listen)}
		// Peers dial the proxy, never the member directly.
		cfg.AdvertisePeerUrls = []url.URL{httpURL(p.addr())}
		cfg.InitialClusterToken = "freshcache-oracle-test"
		cfgs[i] = cfg
		initial = append(initial, fmt.Sprintf("%s=%s", cfg.Name, cfg.AdvertisePeerUrls[0].String()))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	cl.members = make([]*embed.Etcd, n)
	for i, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		wg.Add(1)
		go func() { // members must start together to elect a leader
			defer wg.Done()
			cl.members[i], errs[i] = embed.StartEtcd(cfg)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		t.Cleanup(cl.members[i].Close)
	}
	for _, e := range cl.members {
		waitReady(t, e)
	}
	return cl
}

func (cl *cluster) clientURL(i int) string {
	return cl.members[i].Config().AdvertiseClientUrls[0].String()
}

func (cl *cluster) id(i int) string { return cl.members[i].Server.MemberID().String() }

// isolate cuts member i off from its peers in both directions: its own proxy
// drops every connection, the others' drop every connection from it.
func (cl *cluster) isolate(i int) {
	for j, p := range cl.proxies {
		if j == i {
			p.block("*")
		} else {
			p.block(cl.id(i))
		}
	}
}

func (cl *cluster) heal() {
	for _, p := range cl.proxies {
		p.unblock()
	}
}

// peerProxy forwards TCP connections to one member's peer listener. etcd's
// raft transport names the sending member in the X-Server-From header of
// every request, and each connection carries requests of one sender only,
// so the proxy reads the first request's headers to learn who is talking.
type peerProxy struct {
	ln     net.Listener
	target string

	mu struct {
		sync.Mutex
		blocked map[string]bool       // sender IDs; "*" blocks everyone
		conns   map[net.Conn]string   // accepted connection -> sender ID
		peers   map[net.Conn]net.Conn // accepted connection -> upstream
	}
}

func newPeerProxy(t testing.TB, target string) *peerProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peerProxy{ln: ln, target: target}
	p.mu.blocked = map[string]bool{}
	p.mu.conns = map[net.Conn]string{}
	p.mu.peers = map[net.Conn]net.Conn{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		p.block("*") // closes every live connection
	})
	return p
}

func (p *peerProxy) addr() string { return p.ln.Addr().String() }

func (p *peerProxy) serve(c net.Conn) {
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
	from := hdr.Get("X-Server-From")

	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.mu.blocked["*"] || (from != "" && p.mu.blocked[from]) {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.mu.conns[c] = from
	p.mu.peers[c] = up
	p.mu.Unlock()

	// Replay what was read, then splice.
	var head strings.Builder
	head.WriteString(requestLine + "\r\n")
	for k, vs := range hdr {
		for _, v := range vs {
			head.WriteString(k + ": " + v + "\r\n")
		}
	}
	head.WriteString("\r\n")
	go func() {
		if _, err := io.WriteString(up, head.String()); err == nil {
			_, _ = io.Copy(up, br)
		}
		p.drop(c)
	}()
	_, _ = io.Copy(c, up)
	p.drop(c)
}

func (p *peerProxy) drop(c net.Conn) {
	p.mu.Lock()
	up := p.mu.peers[c]
	delete(p.mu.conns, c)
	delete(p.mu.peers, c)
	p.mu.Unlock()
	_ = c.Close()
	if up != nil {
		_ = up.Close()
	}
}

func (p *peerProxy) block(from string) {
	p.mu.Lock()
	p.mu.blocked[from] = true
	var victims []net.Conn
	for c, f := range p.mu.conns {
		if from == "*" || f == from {
			victims = append(victims, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		p.drop(c)
	}
}

func (p *peerProxy) unblock() {
	p.mu.Lock()
	clear(p.mu.blocked)
	p.mu.Unlock()
}
