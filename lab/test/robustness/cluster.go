package robustness

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/freshcache/freshcache/lab/internal/freeport"
	"github.com/freshcache/freshcache/lab/test/robustness/proxy"
)

// Members is the cluster size.
const Members = 3

// Cluster is a 3-member embedded etcd on loopback whose peer traffic and
// whose pinned clients' traffic pass through proxies the test controls.
//
// Member i listens for peers on a private address; its advertised peer URL
// is its peer proxy, so every raft message to member i passes through
// peerProxies[i]. Caches reach member i through clientProxies[i].
type Cluster struct {
	dir           string
	peerListen    []string
	clientListen  []string
	peerProxies   []*proxy.Proxy
	clientProxies []*proxy.Proxy
	ids           []uint64
	admin         *clientv3.Client
	// pinned[i] reaches member i through its client proxy, as the cache
	// pinned to member i does: client-link faults hit both alike.
	pinned []*clientv3.Client

	// mu guards members: nil while a member is killed.
	mu      sync.Mutex
	members []*embed.Etcd
}

// freeAddr is a loopback address for an etcd listener, outside the
// kernel's ephemeral range (package freeport).
func freeAddr() (string, error) { return freeport.Addr("127.0.0.1") }

// startAttempts bounds how often StartCluster picks new ports after one
// of its picks was taken before a member bound it.
const startAttempts = 3

// StartCluster starts the members together and waits until every one of
// them serves a linearizable read. A port picked free that something took
// before the member bound it (freeport cannot reserve one) fails only that
// attempt: the members' data is removed and the cluster starts again on
// new ports.
func StartCluster(ctx context.Context, dir string, seed uint64) (*Cluster, error) {
	return startClusterPicking(ctx, dir, seed, freeAddr)
}

func startClusterPicking(ctx context.Context, dir string, seed uint64, pick func() (string, error)) (*Cluster, error) {
	var err error
	for range startAttempts {
		var c *Cluster
		c, err = startCluster(ctx, dir, seed, pick)
		if err == nil || !portTaken(err) {
			return c, err
		}
		for i := range Members {
			_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("m%d", i)))
		}
	}
	return nil, fmt.Errorf("%d attempts: %w", startAttempts, err)
}

// portTaken reports whether err is a listener's "address already in use".
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func startCluster(ctx context.Context, dir string, seed uint64, pick func() (string, error)) (*Cluster, error) {
	c := &Cluster{dir: dir, members: make([]*embed.Etcd, Members), ids: make([]uint64, Members)}
	// Picks are not reserved: the same free port could come up twice.
	picked := map[string]bool{}
	distinct := func() (string, error) {
		for range 64 {
			a, err := pick()
			if err != nil || !picked[a] {
				picked[a] = true
				return a, err
			}
		}
		return "", errors.New("no distinct free port in 64 picks")
	}
	for i := range Members {
		pl, err := distinct()
		if err != nil {
			return nil, err
		}
		cl, err := distinct()
		if err != nil {
			return nil, err
		}
		c.peerListen = append(c.peerListen, pl)
		c.clientListen = append(c.clientListen, cl)
		pp, err := proxy.New(proxy.Options{Target: pl, SniffSender: true}, seed+uint64(i))
		if err != nil {
			return nil, err
		}
		cp, err := proxy.New(proxy.Options{Target: cl}, seed+100+uint64(i))
		if err != nil {
			return nil, err
		}
		c.peerProxies = append(c.peerProxies, pp)
		c.clientProxies = append(c.clientProxies, cp)
	}
	var wg sync.WaitGroup
	errs := make([]error, Members)
	for i := range Members {
		wg.Add(1)
		go func() { // members must start together to elect a leader
			defer wg.Done()
			c.members[i], errs[i] = embed.StartEtcd(c.config(i))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	for i, m := range c.members {
		select {
		case <-m.Server.ReadyNotify():
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("member %d not ready: %w", i, ctx.Err())
		}
		c.ids[i] = uint64(m.Server.MemberID())
	}
	admin, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.Close()
		return nil, err
	}
	c.admin = admin
	for i := range Members {
		// clientv3.New does not dial before the first request.
		p, err := clientv3.New(clientv3.Config{Endpoints: []string{c.ProxiedClientURL(i)}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.pinned = append(c.pinned, p)
	}
	return c, c.WaitHealthy(ctx)
}

func (c *Cluster) config(i int) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = fmt.Sprintf("m%d", i)
	cfg.Dir = filepath.Join(c.dir, cfg.Name)
	_ = os.MkdirAll(cfg.Dir, 0o700)
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cu := url.URL{Scheme: "http", Host: c.clientListen[i]}
	cfg.ListenClientUrls = []url.URL{cu}
	cfg.AdvertiseClientUrls = []url.URL{cu}
	cfg.ListenPeerUrls = []url.URL{{Scheme: "http", Host: c.peerListen[i]}}
	// Peers dial the proxy, never the member directly.
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "http", Host: c.peerProxies[i].Addr()}}
	var initial []string
	for j := range Members {
		initial = append(initial, fmt.Sprintf("m%d=http://%s", j, c.peerProxies[j].Addr()))
	}
	cfg.InitialCluster = strings.Join(initial, ",")
	cfg.InitialClusterToken = "freshcache-robustness"
	return cfg
}

// Endpoints are the members' direct client URLs (for the admin and truth
// clients, which must not be affected by client-link faults).
func (c *Cluster) Endpoints() []string {
	out := make([]string, Members)
	for i := range out {
		out[i] = "http://" + c.clientListen[i]
	}
	return out
}

// ProxiedClientURL is member i's client URL through its client proxy: what
// a cache pinned to member i uses.
func (c *Cluster) ProxiedClientURL(i int) string { return c.clientProxies[i].URL() }

// ClientProxy gives the client-link proxy of member i.
func (c *Cluster) ClientProxy(i int) *proxy.Proxy { return c.clientProxies[i] }

// PeerProxy gives the proxy in front of member i's peer listener.
func (c *Cluster) PeerProxy(i int) *proxy.Proxy { return c.peerProxies[i] }

// Admin is a client over every member, directly.
func (c *Cluster) Admin() *clientv3.Client { return c.admin }

// Pinned is a client of member i through its client proxy: what a client
// that writes to etcd directly uses next to the API pinned to member i.
func (c *Cluster) Pinned(i int) *clientv3.Client { return c.pinned[i] }

// ID is member i's raft ID.
func (c *Cluster) ID(i int) uint64 { return c.ids[i] }

func (c *Cluster) member(i int) *embed.Etcd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i]
}

// Kill stops member i abruptly (its data stays).
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	m := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	if m != nil {
		m.Close()
	}
}

// Restart starts a killed member i again from its data.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	c.mu.Lock()
	running := c.members[i] != nil
	c.mu.Unlock()
	if running {
		return nil
	}
	var m *embed.Etcd
	var err error
	// The killed member's listeners may take a moment to release their
	// ports; retry until ctx ends.
	retry := time.NewTicker(200 * time.Millisecond)
	defer retry.Stop()
	for {
		m, err = embed.StartEtcd(c.config(i))
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart member %d: %w (last error %v)", i, ctx.Err(), err)
		case <-retry.C:
		}
	}
	select {
	case <-m.Server.ReadyNotify():
	case <-ctx.Done():
		m.Close()
		return fmt.Errorf("restart member %d: not ready: %w", i, ctx.Err())
	}
	c.mu.Lock()
	c.members[i] = m
	c.mu.Unlock()
	return nil
}

// Isolate cuts member i off from its peers in both directions.
func (c *Cluster) Isolate(i int) {
	for j, p := range c.peerProxies {
		if j == i {
			p.Block(proxy.Everyone)
		} else {
			p.Block(fmt.Sprintf("%x", c.ids[i]))
		}
	}
}

// HealPeers removes every peer-link fault.
func (c *Cluster) HealPeers() {
	for _, p := range c.peerProxies {
		p.Heal()
	}
}

// Leader returns the index of the member every running member agrees
// leads, or -1.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	lead := uint64(0)
	for _, m := range c.members {
		if m == nil {
			continue
		}
		l := uint64(m.Server.Leader())
		if l == 0 || (lead != 0 && l != lead) {
			return -1
		}
		lead = l
	}
	for i, id := range c.ids {
		if id == lead {
			return i
		}
	}
	return -1
}

// MoveLeader transfers leadership to member to.
func (c *Cluster) MoveLeader(ctx context.Context, to int) error {
	lead := c.Leader()
	if lead < 0 {
		return errors.New("no agreed leader")
	}
	if lead == to {
		return nil
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoints()[lead]}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.MoveLeader(ctx, c.ids[to])
	return err
}

// WaitHealthy waits until every member is running, agrees on a leader and
// serves a linearizable read.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		last = c.healthy(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not healthy: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func (c *Cluster) healthy(ctx context.Context) error {
	if c.Leader() < 0 {
		return errors.New("no agreed leader")
	}
	for i, ep := range c.Endpoints() {
		if c.member(i) == nil {
			return fmt.Errorf("member %d is down", i)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = cli.Get(rctx, "health")
		cancel()
		_ = cli.Close()
		if err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
	}
	return nil
}

// Close stops everything.
func (c *Cluster) Close() {
	if c.admin != nil {
		_ = c.admin.Close()
	}
	for _, p := range c.pinned {
		_ = p.Close()
	}
	for i := range c.members {
		c.Kill(i)
	}
	for _, p := range c.peerProxies {
		p.Close()
	}
	for _, p := range c.clientProxies {
		p.Close()
	}
}
