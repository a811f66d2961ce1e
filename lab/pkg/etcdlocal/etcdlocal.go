package etcdlocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/freshcache/freshcache/lab/internal/freeport"
)

// ErrPortInUse is wrapped by Start when a port it was told to use is taken.
var ErrPortInUse = errors.New("etcdlocal: port already in use")

// ErrNotReady is wrapped by Start when the members do not serve in time.
var ErrNotReady = errors.New("etcdlocal: etcd did not become ready")

// Options configure a local etcd. The zero value is one member on
// 127.0.0.1 with free ports, data in a directory that must be given.
type Options struct {
	// DataDir holds one sub-directory per member. Required.
	DataDir string
	// Members is the cluster size, 1 when zero.
	Members int
	// Host is the loopback address members listen on; 127.0.0.1 when empty.
	Host string
	// ClientPorts and PeerPorts give one port per member. A missing entry or
	// 0 picks a free port.
	ClientPorts []int
	PeerPorts   []int
	// ReadyTimeout bounds the wait for the cluster to serve; 60s when zero.
	ReadyTimeout time.Duration
	// LogLevel is etcd's zap level; "error" when empty, which keeps the
	// launcher's terminal readable.
	LogLevel string
	// LogFile receives etcd's log at LogLevel "info" when set; otherwise
	// etcd logs to stderr at LogLevel.
	LogFile string
	// UnsafeNoFsync trades durability for speed. Tests only.
	UnsafeNoFsync bool
}

// Cluster is a running local etcd.
type Cluster struct {
	members   []*embed.Etcd
	endpoints []string
	// logLevel is the level of the stderr logger (nil with a LogFile).
	// Close raises it: a member that is shutting down logs every closed
	// listener as an error ("mux: server closed"), which is expected.
	logLevel *zap.AtomicLevel
}

// Endpoints returns the client URL of every member.
func (c *Cluster) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// Members gives access to the embedded servers, for tests that stop or
// isolate one.
func (c *Cluster) Members() []*embed.Etcd { return append([]*embed.Etcd(nil), c.members...) }

// Close stops every member and waits until they are down.
func (c *Cluster) Close() {
	if c.logLevel != nil {
		c.logLevel.SetLevel(zapcore.FatalLevel)
	}
	for _, m := range c.members {
		m.Close()
	}
}

func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("etcdlocal: Options.DataDir is required")
	}
	if o.Members == 0 {
		o.Members = 1
	}
	if o.Members < 0 || o.Members > 7 {
		return o, fmt.Errorf("etcdlocal: %d members requested; between 1 and 7 are supported", o.Members)
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	if o.LogLevel == "" {
		o.LogLevel = "error"
	}
	return o, nil
}

// Start runs the cluster and waits until it serves, ctx is done, or
// Options.ReadyTimeout passes.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	clientPorts, err := ports(opts.Host, opts.ClientPorts, opts.Members, "client")
	if err != nil {
		return nil, err
	}
	peerPorts, err := ports(opts.Host, opts.PeerPorts, opts.Members, "peer")
	if err != nil {
		return nil, err
	}

	names := make([]string, opts.Members)
	initial := make([]string, opts.Members)
	for i := range names {
		names[i] = "member-" + strconv.Itoa(i)
		initial[i] = names[i] + "=" + hostURL(opts.Host, peerPorts[i])
	}

	c := &Cluster{}
	var stderrLog *zap.Logger
	if opts.LogFile == "" {
		lc := logutil.DefaultZapLoggerConfig
		lc.OutputPaths = []string{"stderr"}
		lc.ErrorOutputPaths = []string{"stderr"}
		level := zap.NewAtomicLevelAt(logutil.ConvertToZapLevel(opts.LogLevel))
		lc.Level = level
		if stderrLog, err = lc.Build(); err != nil {
			return nil, fmt.Errorf("etcdlocal: building etcd's logger: %w", err)
		}
		c.logLevel = &level
	}
	for i := range names {
		cfg := embed.NewConfig()
		cfg.Name = names[i]
		cfg.Dir = filepath.Join(opts.DataDir, names[i])
		cfg.LogLevel = opts.LogLevel
		if opts.LogFile != "" {
			cfg.LogLevel = "info"
			cfg.LogOutputs = []string{opts.LogFile}
		} else {
			cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(stderrLog.With(zap.String("member", names[i])))
		}
		cfg.UnsafeNoFsync = opts.UnsafeNoFsync
		clientURL, _ := url.Parse(hostURL(opts.Host, clientPorts[i]))
		peerURL, _ := url.Parse(hostURL(opts.Host, peerPorts[i]))
		cfg.ListenClientUrls = []url.URL{*clientURL}
		cfg.AdvertiseClientUrls = []url.URL{*clientURL}
		cfg.ListenPeerUrls = []url.URL{*peerURL}
		cfg.AdvertisePeerUrls = []url.URL{*peerURL}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "freshcache-local"
		member, err := embed.StartEtcd(cfg)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("etcdlocal: starting %s (data in %s): %w", names[i], cfg.Dir, err)
		}
		c.members = append(c.members, member)
		c.endpoints = append(c.endpoints, clientURL.String())
	}

	timer := time.NewTimer(opts.ReadyTimeout)
	defer timer.Stop()
	for i, m := range c.members {
		select {
		case <-m.Server.ReadyNotify():
		case err := <-m.Err():
			c.Close()
			return nil, fmt.Errorf("etcdlocal: %s failed while starting: %w", names[i], err)
		case <-timer.C:
			c.Close()
			return nil, fmt.Errorf("%w: %s did not join a quorum within %s (data in %s)", ErrNotReady, names[i], opts.ReadyTimeout, opts.DataDir)
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("etcdlocal: start cancelled: %w", ctx.Err())
		}
	}
	return c, nil
}

func hostURL(host string, port int) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// ports returns n ports: the given ones after checking they are free, and
// free ones for the rest.
func ports(host string, given []int, n int, kind string) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		if i < len(given) && given[i] != 0 {
			if err := CheckPortFree(host, given[i]); err != nil {
				return nil, fmt.Errorf("etcd %s port: %w", kind, err)
			}
			out[i] = given[i]
			continue
		}
		p, err := freeport.Port(host)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// CheckPortFree reports ErrPortInUse if host:port cannot be listened on.
func CheckPortFree(host string, port int) error {
	if err := freeport.Check(host, port); err != nil {
		return fmt.Errorf("%w: %s (%v)", ErrPortInUse, net.JoinHostPort(host, strconv.Itoa(port)), err)
	}
	return nil
}
