package etcdcluster

import (
	"bufio"
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
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Cluster is a 3-member embedded etcd whose peer traffic runs through
// proxies, one in front of each member's peer listener, so that a test can
// cut a member off from its peers in both directions (the seed scenario,
// docs/design.md, "The problem").
type Cluster struct {
	Members []*embed.Etcd
	proxies []*peerProxy
}

const clusterStartTimeout = 60 * time.Second

// anyPort is a loopback URL on port 0: etcd binds it and the kernel picks
// the port at that moment, so no test ever picks a port that something
// else takes before the bind. ClientURL reads back where a member listens.
var anyPort = url.URL{Scheme: "http", Host: "127.0.0.1:0"}

// MemberConfig is an embedded etcd member for tests: its own data
// directory, no fsync, no logs, and a client listener on a loopback port
// the kernel picks (ClientURL names it). Peer URLs and the initial cluster
// are the caller's.
func MemberConfig(t testing.TB, name string) *embed.Config {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = t.TempDir()
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls = []url.URL{anyPort}
	// Published in the member list only; every client here dials
	// ClientURL.
	cfg.AdvertiseClientUrls = []url.URL{anyPort}
	return cfg
}

// ClientURL is the client endpoint e listens on.
func ClientURL(e *embed.Etcd) string { return "http://" + e.Clients[0].Addr().String() }

// WaitReady waits until e serves, or fails the test after a minute.
func WaitReady(t testing.TB, e *embed.Etcd) {
	t.Helper()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(clusterStartTimeout):
		e.Close()
		t.Fatalf("etcd %s not ready within %v", e.Config().Name, clusterStartTimeout)
	}
}

// StartSingle starts a one-member cluster and waits until it serves. It
// returns the member and a stop func that may be called any number of
// times; cleanup calls it too.
func StartSingle(t testing.TB) (*embed.Etcd, func()) {
	t.Helper()
	cfg := MemberConfig(t, "single")
	// A single member never dials its peer URL.
	cfg.ListenPeerUrls = []url.URL{anyPort}
	cfg.AdvertisePeerUrls = []url.URL{anyPort}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	WaitReady(t, e)
	return e, stop
}

// Start starts the three members and waits until they serve. Cleanup stops
// them.
func Start(t testing.TB) *Cluster {
	t.Helper()
	const n = 3
	cl := &Cluster{}
	cfgs := make([]*embed.Config, n)
	var initial []string
	for i := range n {
		cfg := MemberConfig(t, fmt.Sprintf("m%d", i))
		p := newPeerProxy(t)
		cl.proxies = append(cl.proxies, p)
		// The member's own peer listener is on a port the kernel picks;
		// its proxy learns it once the member has bound it. Peers dial
		// the proxy, never the member directly.
		cfg.ListenPeerUrls = []url.URL{anyPort}
		cfg.AdvertisePeerUrls = []url.URL{{Scheme: "http", Host: p.addr()}}
		cfg.InitialClusterToken = "freshcache-etcdcluster"
		cfgs[i] = cfg
		initial = append(initial, fmt.Sprintf("%s=%s", cfg.Name, cfg.AdvertisePeerUrls[0].String()))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	cl.Members = make([]*embed.Etcd, n)
	for i, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		wg.Add(1)
		go func() { // members must start together to elect a leader
			defer wg.Done()
			cl.Members[i], errs[i] = embed.StartEtcd(cfg)
			if errs[i] == nil {
				cl.proxies[i].setTarget(cl.Members[i].Peers[0].Addr().String())
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		t.Cleanup(cl.Members[i].Close)
	}
	for _, e := range cl.Members {
		WaitReady(t, e)
	}
	return cl
}

// ClientURL is member i's client endpoint.
func (cl *Cluster) ClientURL(i int) string { return ClientURL(cl.Members[i]) }

// Roles returns the index of a member that sees itself as leader and of a
// follower, or -1s if there is no leader yet.
func (cl *Cluster) Roles() (leader, follower int) {
	leader, follower = -1, -1
	for i, e := range cl.Members {
		if e.Server.Leader() == e.Server.MemberID() {
			leader = i
		} else if follower < 0 {
			follower = i
		}
	}
	return leader, follower
}

// KubeClient is an etcd client, as the etcd3 store uses, that talks to
// member i only. Cleanup closes it.
func (cl *Cluster) KubeClient(t testing.TB, i int) *kubernetes.Client {
	t.Helper()
	return closeAtCleanup(t, kubernetes.New, cl.ClientURL(i))
}

// Client is a plain etcd client of endpoint. Cleanup closes it.
func Client(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	return closeAtCleanup(t, clientv3.New, endpoint)
}

// closeAtCleanup makes a client of endpoint with newClient, quiet and with
// a 10 s dial timeout, and closes it at t's cleanup.
func closeAtCleanup[C interface{ Close() error }](t testing.TB, newClient func(clientv3.Config) (C, error), endpoint string) C {
	t.Helper()
	c, err := newClient(clientv3.Config{
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

// ID is member i's etcd member ID, for logs.
func (cl *Cluster) ID(i int) string { return cl.Members[i].Server.MemberID().String() }

// Isolate cuts member i off from its peers in both directions: its own
// proxy drops every connection, the others' drop every connection from it.
func (cl *Cluster) Isolate(i int) {
	for j, p := range cl.proxies {
		if j == i {
			p.block("*")
		} else {
			p.block(cl.ID(i))
		}
	}
}

// Heal undoes Isolate.
func (cl *Cluster) Heal() {
	for _, p := range cl.proxies {
		p.unblock()
	}
}

// peerProxy forwards TCP connections to one member's peer listener. etcd's
// raft transport names the sending member in the X-Server-From header of
// every request, and each connection carries requests of one sender only,
// so the proxy reads the first request's headers to learn who is talking.
type peerProxy struct {
	ln net.Listener

	mu struct {
		sync.Mutex
		target  string                // the member's peer listener; "" until it is bound
		blocked map[string]bool       // sender IDs; "*" blocks everyone
		conns   map[net.Conn]string   // accepted connection -> sender ID
		peers   map[net.Conn]net.Conn // accepted connection -> upstream
	}
}

func newPeerProxy(t testing.TB) *peerProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peerProxy{ln: ln}
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

// setTarget names the member's peer listener once it is bound.
func (p *peerProxy) setTarget(addr string) {
	p.mu.Lock()
	p.mu.target = addr
	p.mu.Unlock()
}

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

	p.mu.Lock()
	target := p.mu.target
	p.mu.Unlock()
	if target == "" { // the member is still starting; raft dials again
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", target)
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
