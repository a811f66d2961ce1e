package localup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/pkg/etcdlocal"
)

// Options configure a local control plane. NewOptions gives the defaults.
type Options struct {
	// DataDir holds etcd's data, credentials, kubeconfigs and logs.
	DataDir string
	// EtcdMembers is the size of the embedded etcd cluster.
	EtcdMembers int
	// EtcdServers, when set, replaces the embedded etcd with these URLs.
	EtcdServers []string
	// EtcdClientPort and EtcdPeerPort are member 0's ports. Member i adds
	// i*10000, the layout of etcd's own Procfile (2379, 12379, 22379).
	EtcdClientPort int
	EtcdPeerPort   int
	// EtcdReadyTimeout bounds the wait for the embedded etcd.
	EtcdReadyTimeout time.Duration
	// APIServers is the number of kube-apiserver processes.
	APIServers int
	// SecurePort is the first kube-apiserver's port; instance i adds i.
	SecurePort int
	// BindAddress is the loopback address the apiservers listen on.
	BindAddress string
	// Binary is the kube-apiserver to run.
	Binary string
	// ReadyTimeout bounds the wait for each kube-apiserver's /readyz.
	ReadyTimeout time.Duration
	// ShutdownGrace is how long a kube-apiserver may take to stop on SIGTERM.
	ShutdownGrace time.Duration
	// PassThrough are extra kube-apiserver flags, appended last so they win.
	PassThrough []string
}

// NewOptions returns the defaults of `make run`.
func NewOptions() *Options {
	return &Options{
		DataDir:          filepath.Join("_output", "local-up"),
		EtcdMembers:      1,
		EtcdClientPort:   2379,
		EtcdPeerPort:     2380,
		EtcdReadyTimeout: time.Minute,
		APIServers:       1,
		SecurePort:       6443,
		BindAddress:      "127.0.0.1",
		ReadyTimeout:     3 * time.Minute,
		ShutdownGrace:    30 * time.Second,
	}
}

// AddFlags registers local-up's own flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for etcd data, credentials, kubeconfigs and logs. Kept across restarts.")
	fs.IntVar(&o.EtcdMembers, "etcd-members", o.EtcdMembers, "Members of the embedded etcd cluster, all on loopback (1 or 3).")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "Use this existing etcd cluster (comma-separated URLs) instead of an embedded one.")
	fs.IntVar(&o.EtcdClientPort, "etcd-client-port", o.EtcdClientPort, "Client port of the first embedded etcd member; member i adds i*10000. 0 picks free ports.")
	fs.IntVar(&o.EtcdPeerPort, "etcd-peer-port", o.EtcdPeerPort, "Peer port of the first embedded etcd member; member i adds i*10000. 0 picks free ports.")
	fs.DurationVar(&o.EtcdReadyTimeout, "etcd-ready-timeout", o.EtcdReadyTimeout, "How long to wait for etcd (embedded or --etcd-servers) to serve.")
	fs.IntVar(&o.APIServers, "apiservers", o.APIServers, "Number of kube-apiserver processes against the same etcd, on consecutive ports, each with its own kubeconfig.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port of the first kube-apiserver; instance i uses secure-port+i.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Loopback address the kube-apiservers listen on.")
	fs.StringVar(&o.Binary, "kube-apiserver", o.Binary, "Path of the kube-apiserver binary. Default: next to local-up, then $PATH.")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", o.ReadyTimeout, "How long to wait for each kube-apiserver's /readyz.")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", o.ShutdownGrace, "How long a kube-apiserver may take to stop before it is killed.")
}

// Validate reports every problem with the options.
func (o *Options) Validate() []error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if len(o.EtcdServers) == 0 && o.EtcdMembers != 1 && o.EtcdMembers != 3 {
		errs = append(errs, fmt.Errorf("--etcd-members=%d: use 1 or 3", o.EtcdMembers))
	}
	if o.APIServers < 1 || o.APIServers > 9 {
		errs = append(errs, fmt.Errorf("--apiservers=%d: use 1 to 9", o.APIServers))
	}
	if o.SecurePort < 1 || o.SecurePort+o.APIServers-1 > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port=%d: out of range", o.SecurePort))
	}
	if ip := net.ParseIP(o.BindAddress); ip == nil || !ip.IsLoopback() {
		errs = append(errs, fmt.Errorf("--bind-address=%q: local-up listens on loopback only", o.BindAddress))
	}
	for _, flag := range []string{"etcd-servers", "secure-port", "bind-address"} {
		if HasFlag(o.PassThrough, flag) {
			errs = append(errs, fmt.Errorf("--%s is local-up's own flag; give it before any kube-apiserver flags", flag))
		}
	}
	return errs
}

// Cluster is a running local control plane.
type Cluster struct {
	Options     *Options
	PKI         PKI
	Etcd        *etcdlocal.Cluster // nil with external etcd
	Endpoints   []string
	APIServers  []*APIServer
	Kubeconfigs []string
}

// Start brings up etcd and the kube-apiservers and waits until every
// apiserver is ready. On error everything already started is stopped.
func Start(ctx context.Context, o *Options, out io.Writer) (_ *Cluster, err error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	binary, err := o.resolveBinary()
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	for i := 0; i < o.APIServers; i++ {
		if err := etcdlocal.CheckPortFree(o.BindAddress, o.SecurePort+i); err != nil {
			return nil, fmt.Errorf("kube-apiserver port (--secure-port): %w", err)
		}
	}
	for _, dir := range []string{"logs", "pki"} {
		if err := os.MkdirAll(filepath.Join(dataDir, dir), 0o755); err != nil {
			return nil, err
		}
	}

	c := &Cluster{Options: o, PKI: PKI{Dir: filepath.Join(dataDir, "pki")}}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.PKI.Ensure(DefaultHosts()); err != nil {
		return nil, fmt.Errorf("writing credentials: %w", err)
	}

	if len(o.EtcdServers) > 0 {
		c.Endpoints = o.EtcdServers
		if err := CheckEtcd(ctx, c.Endpoints, o.EtcdReadyTimeout); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "Using etcd at %s\n", strings.Join(c.Endpoints, ","))
	} else {
		clientPorts, peerPorts := memberPorts(o.EtcdClientPort, o.EtcdMembers), memberPorts(o.EtcdPeerPort, o.EtcdMembers)
		c.Etcd, err = etcdlocal.Start(ctx, etcdlocal.Options{
			DataDir:      filepath.Join(dataDir, "etcd"),
			Members:      o.EtcdMembers,
			ClientPorts:  clientPorts,
			PeerPorts:    peerPorts,
			ReadyTimeout: o.EtcdReadyTimeout,
			LogFile:      filepath.Join(dataDir, "logs", "etcd.log"),
		})
		if err != nil {
			return nil, err
		}
		c.Endpoints = c.Etcd.Endpoints()
		fmt.Fprintf(out, "etcd: %d member(s) at %s, data in %s, log %s\n", o.EtcdMembers, strings.Join(c.Endpoints, ","),
			filepath.Join(dataDir, "etcd"), filepath.Join(dataDir, "logs", "etcd.log"))
	}

	for i := 0; i < o.APIServers; i++ {
		name := "kube-apiserver-" + strconv.Itoa(i+1)
		port := o.SecurePort + i
		url := "https://" + net.JoinHostPort(o.BindAddress, strconv.Itoa(port))
		kubeconfig := filepath.Join(dataDir, "kubeconfig")
		if i > 0 {
			kubeconfig += "-" + strconv.Itoa(i+1)
		}
		if err := WriteKubeconfig(kubeconfig, url, c.PKI); err != nil {
			return nil, err
		}
		s, err := StartAPIServer(name, binary, url, filepath.Join(dataDir, "logs", name+".log"), c.apiserverArgs(port))
		if err != nil {
			return nil, err
		}
		c.APIServers = append(c.APIServers, s)
		c.Kubeconfigs = append(c.Kubeconfigs, kubeconfig)
		fmt.Fprintf(out, "%s: pid %d, %s, log %s\n", name, s.Pid(), url, s.LogPath)
	}
	for _, s := range c.APIServers {
		if err := s.WaitReady(ctx, RESTConfig(s.URL, c.PKI), o.ReadyTimeout); err != nil {
			return nil, fmt.Errorf("%w\nlast lines of %s:\n%s", err, s.LogPath, s.TailLog(15))
		}
	}
	return c, nil
}

func memberPorts(base, n int) []int {
	out := make([]int, n)
	if base == 0 {
		return out
	}
	for i := range out {
		out[i] = base + i*10000
	}
	return out
}

// apiserverArgs are the flags of instance i. The apiservers advertise the
// loopback address they listen on. kube-apiserver refuses loopback addresses
// in the endpoints of the kubernetes service, so the endpoint reconciler is
// off: nothing in a local control plane dials that service. Give
// --endpoint-reconciler-type and --advertise-address to change this.
func (c *Cluster) apiserverArgs(port int) []string {
	args := []string{
		"--etcd-servers=" + strings.Join(c.Endpoints, ","),
		"--bind-address=" + c.Options.BindAddress,
		"--advertise-address=" + c.Options.BindAddress,
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.PKI.ServingCert(),
		"--tls-private-key-file=" + c.PKI.ServingKey(),
		"--client-ca-file=" + c.PKI.CACert(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.PKI.ServiceAccountPub(),
		"--service-account-signing-key-file=" + c.PKI.ServiceAccountKey(),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
	}
	return append(args, c.Options.PassThrough...)
}

// Stop stops the apiservers, then etcd. It is safe to call more than once.
func (c *Cluster) Stop() {
	for _, s := range c.APIServers {
		s.Stop(c.Options.ShutdownGrace)
	}
	if c.Etcd != nil {
		c.Etcd.Close()
		c.Etcd = nil
	}
}

func (o *Options) resolveBinary() (string, error) {
	if o.Binary != "" {
		if _, err := os.Stat(o.Binary); err != nil {
			return "", fmt.Errorf("--kube-apiserver=%s: %w", o.Binary, err)
		}
		return o.Binary, nil
	}
	if self, err := os.Executable(); err == nil {
		candidate := filepath.Join(filepath.Dir(self), "kube-apiserver")
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
	}
	if p, err := lookPath("kube-apiserver"); err == nil {
		return p, nil
	}
	return "", errors.New("no kube-apiserver binary next to local-up or on $PATH; run `make build` or pass --kube-apiserver")
}
