package localup

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/freshcache/freshcache/lab/pkg/localup/kwoknode"
	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

// MaxNodes bounds --nodes. A hollow node costs about 17 MB of its own and
// 3.5 millicores idle, and all of them start at once (docs/hollow-nodes.md:
// 120 ran without strain on 2 cores); far more than this is a typo.
const MaxNodes = 200

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
	// SecurePort is the first kube-apiserver's port; instance i adds i. 0
	// picks a free port for each; the ready file's URLs name them.
	SecurePort int
	// BindAddress is the loopback address the apiservers listen on.
	BindAddress string
	// Binary is the kube-apiserver to run.
	Binary string
	// ReadyTimeout bounds the wait for each kube-apiserver's /readyz, and
	// then for the controllers and the nodes.
	ReadyTimeout time.Duration
	// ShutdownGrace is how long a kube-apiserver may take to stop on SIGTERM.
	ShutdownGrace time.Duration

	// Controllers runs kube-controller-manager and kube-scheduler.
	Controllers bool
	// ControllerQPS, when positive, is the controller-manager's and the
	// scheduler's --kube-api-qps and --kube-api-burst (their own defaults
	// are 20/30 and 50/100): thousands of pods roll out at this pace.
	ControllerQPS float64
	// LeaderElect runs kube-controller-manager and kube-scheduler with
	// --leader-elect, as a kubeadm control plane does. With it, a
	// controller that cannot renew its lease within its deadline (an
	// apiserver overloaded on purpose) exits, and local-up then stops the
	// whole cluster; a benchmark that overloads the apiserver turns it off.
	LeaderElect bool
	// ControllerManagerBinary and SchedulerBinary are the binaries to run;
	// empty means next to local-up, then $PATH.
	ControllerManagerBinary string
	SchedulerBinary         string

	// Nodes is the number of kubemark hollow nodes.
	Nodes int
	// NodeNamePrefix names node i NodeNamePrefix+i.
	NodeNamePrefix string
	// KubemarkBinary is the kubemark to run; empty means next to local-up,
	// then $PATH.
	KubemarkBinary string
	// KubeletPort is node 0's kubelet port; node i adds i. 0 picks free
	// ports.
	KubeletPort int
	// NodeAPIServer is the apiserver (1-based) every node talks to; 0
	// spreads the hollow nodes over the apiservers round-robin and puts
	// the real nodes on the first.
	NodeAPIServer int
	// NodeAPIServerOverrides maps a node name, hollow or real, to its
	// apiserver (1-based), over NodeAPIServer.
	NodeAPIServerOverrides map[string]string

	// RealNodes is the number of real nodes (0 or 1): containerd and the
	// upstream kubelet with real pods (package realnode; needs root).
	RealNodes int
	// RealNodeIP is the real node's InternalIP, added to lo for the run.
	// The first apiserver also serves on it, for the kubernetes Service
	// (kubernetesservice.go).
	RealNodeIP string
	// RealNodeKubeProxy runs kube-proxy (iptables mode) on each real node.
	RealNodeKubeProxy bool
	// RealNodeDNS deploys CoreDNS on the first real node and points the
	// real kubelets' clusterDNS at it; it needs RealNodeKubeProxy.
	RealNodeDNS bool
	// RealNodeE2EImages adds upstream's agnhost e2e test image to the real
	// nodes (built from AgnhostBinary with Debian's curl and dig).
	RealNodeE2EImages bool
	// RealNodeFeatureGates are the real kubelets' --feature-gates, e.g.
	// WatchListClient=false for a kubelet whose client lists first.
	RealNodeFeatureGates map[string]bool
	// KubeletBinary, PauseBinary, KubeProxyBinary and CoreDNSBinary are
	// the real nodes' programs; empty means next to local-up, then $PATH.
	KubeletBinary, PauseBinary, KubeProxyBinary, CoreDNSBinary string
	// AgnhostBinary is agnhost, for RealNodeE2EImages; empty means next
	// to local-up, then $PATH.
	AgnhostBinary string

	// Kwok are the kwok nodes: Node objects that one kwok controller keeps
	// Ready, with pods that go Running without running (package
	// kwoknode); Kwok.Nodes 0 runs none.
	Kwok kwoknode.Options
	// KwokBinary is kwok's controller (make build-kwok); empty means next to
	// local-up, then $PATH.
	KwokBinary string

	// PassThrough are extra kube-apiserver flags, appended last so they win.
	PassThrough []string

	// APIServerEtcdServers, where entry i is not empty, gives apiserver i
	// (0-based) these etcd URLs instead of every endpoint: one apiserver
	// pinned to one member, as kubernetes#59848's HA setup needs. There is
	// no flag; programs (lab/test/demo59848) set it.
	APIServerEtcdServers [][]string
	// APIServerArgs[i] are extra flags of apiserver i only, after
	// PassThrough (e.g. an audit log of its own).
	APIServerArgs [][]string
}

// NewOptions returns the defaults of `make run`: one apiserver, the
// controller-manager, the scheduler and two hollow nodes.
func NewOptions() *Options {
	return &Options{
		DataDir:           filepath.Join("_output", "local-up"),
		EtcdMembers:       1,
		EtcdClientPort:    2379,
		EtcdPeerPort:      2380,
		EtcdReadyTimeout:  time.Minute,
		APIServers:        1,
		SecurePort:        6443,
		BindAddress:       "127.0.0.1",
		ReadyTimeout:      3 * time.Minute,
		ShutdownGrace:     30 * time.Second,
		Controllers:       true,
		LeaderElect:       true,
		Nodes:             2,
		NodeNamePrefix:    "hollow-",
		RealNodeIP:        realnode.DefaultNodeIP,
		RealNodeKubeProxy: true,
		RealNodeDNS:       true,
		Kwok:              kwoknode.NewOptions(),
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
	fs.IntVar(&o.APIServers, "apiservers", o.APIServers, "Number of kube-apiserver processes against the same etcd, on consecutive ports from --secure-port, each with its own kubeconfig.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port of the first kube-apiserver; instance i uses secure-port+i. 0 picks free ports (the ready file's apiserver URLs name them).")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Loopback address the kube-apiservers, controller-manager and scheduler listen on.")
	fs.StringVar(&o.Binary, "kube-apiserver", o.Binary, "Path of the kube-apiserver binary. Default: next to local-up, then $PATH.")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", o.ReadyTimeout, "How long to wait for each kube-apiserver's /readyz, then for the controllers and then for the nodes to be Ready.")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", o.ShutdownGrace, "How long a child process may take to stop before it is killed.")

	fs.BoolVar(&o.Controllers, "controllers", o.Controllers, "Run kube-controller-manager and kube-scheduler (against the first kube-apiserver), each with its own identity.")
	fs.Float64Var(&o.ControllerQPS, "controller-kube-api-qps", o.ControllerQPS, "When positive, the kube-controller-manager's and kube-scheduler's --kube-api-qps and --kube-api-burst, as scale tests raise them for thousands of pods; 0 keeps their defaults.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Run kube-controller-manager and kube-scheduler with --leader-elect, as a kubeadm control plane does. A controller that cannot renew its lease exits, and local-up then stops the cluster: a benchmark that overloads the apiserver on purpose sets it false.")
	fs.StringVar(&o.ControllerManagerBinary, "kube-controller-manager", o.ControllerManagerBinary, "Path of the kube-controller-manager binary. Default: next to local-up, then $PATH.")
	fs.StringVar(&o.SchedulerBinary, "kube-scheduler", o.SchedulerBinary, "Path of the kube-scheduler binary. Default: next to local-up, then $PATH.")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, fmt.Sprintf("Number of kubemark hollow nodes: the real kubelet on a fake container runtime, one process each (0 to %d).", MaxNodes))
	fs.StringVar(&o.NodeNamePrefix, "node-name-prefix", o.NodeNamePrefix, "Node i is called <prefix><i>.")
	fs.StringVar(&o.KubemarkBinary, "kubemark", o.KubemarkBinary, "Path of the kubemark binary (hollow nodes). Default: next to local-up, then $PATH.")
	fs.IntVar(&o.KubeletPort, "kubelet-port", o.KubeletPort, "Kubelet port of the first hollow node; node i uses kubelet-port+i. 0 picks free ports.")
	fs.IntVar(&o.NodeAPIServer, "node-apiserver", o.NodeAPIServer, "Which kube-apiserver (1 to --apiservers) the nodes talk to. 0 spreads the hollow nodes round-robin (node i uses apiserver i mod N + 1) and puts the real nodes on the first.")
	fs.IntVar(&o.RealNodes, "real-nodes", o.RealNodes, "Real nodes beside the hollow ones (0 or 1): containerd, runc and the upstream kubelet, with pods that are real processes (logs and exec work). Needs root; installs containerd, runc, containernetworking-plugins, busybox-static and iptables with apt-get when missing; adds --real-node-ip to lo, a CNI bridge, iptables rules and sysctls, all undone at exit.")
	fs.StringVar(&o.RealNodeIP, "real-node-ip", o.RealNodeIP, "The real node's InternalIP (IPv4, not loopback), added to lo while local-up runs. The first kube-apiserver also serves on it and advertises it: pods reach it through the kubernetes Service.")
	fs.BoolVar(&o.RealNodeKubeProxy, "real-node-kube-proxy", o.RealNodeKubeProxy, "Run kube-proxy (iptables mode, as system:kube-proxy) on the real nodes, so Services work from pods and the host.")
	fs.BoolVar(&o.RealNodeDNS, "real-node-dns", o.RealNodeDNS, "Deploy CoreDNS (Service kube-system/kube-dns at 10.0.0.10) on the real node and make it the real kubelets' cluster DNS; needs --real-node-kube-proxy and the coredns binary (make build-coredns).")
	fs.StringToStringVar(&o.NodeAPIServerOverrides, "node-apiserver-overrides", o.NodeAPIServerOverrides, "Per-node kube-apiserver over --node-apiserver, hollow or real, e.g. hollow-0=2,real-0=1.")
	fs.StringVar(&o.KubeletBinary, "kubelet", o.KubeletBinary, "Path of the kubelet binary (real nodes). Default: next to local-up, then $PATH.")
	fs.StringVar(&o.PauseBinary, "freshcache-pause", o.PauseBinary, "Path of the statically linked pause program packed into the real nodes' sandbox image. Default: next to local-up, then $PATH.")
	fs.StringVar(&o.KubeProxyBinary, "kube-proxy", o.KubeProxyBinary, "Path of the kube-proxy binary (real nodes). Default: next to local-up, then $PATH.")
	fs.StringVar(&o.CoreDNSBinary, "coredns", o.CoreDNSBinary, "Path of the coredns binary (--real-node-dns). Default: next to local-up, then $PATH.")
	fs.BoolVar(&o.RealNodeE2EImages, "real-node-e2e-images", o.RealNodeE2EImages, "Also give the real nodes upstream's e2e test image agnhost:2.66.1, built from the agnhost program (make build-e2e-suite) with Debian's curl and dig (installed when missing).")
	fs.StringVar(&o.AgnhostBinary, "agnhost", o.AgnhostBinary, "Path of the statically linked agnhost binary (--real-node-e2e-images). Default: next to local-up, then $PATH.")
	fs.IntVar(&o.Kwok.Nodes, "kwok-nodes", o.Kwok.Nodes, fmt.Sprintf("Number of kwok nodes (0 to %d): Node objects that one kwok controller keeps Ready and whose pods it marks Running without running them; no kubelet, so thousands fit. Needs the kwok binary (make build-kwok).", kwoknode.MaxNodes))
	fs.StringVar(&o.Kwok.NamePrefix, "kwok-node-name-prefix", o.Kwok.NamePrefix, "kwok node i is called <prefix><i>.")
	fs.DurationVar(&o.Kwok.NodeStatusInterval, "kwok-node-status-interval", o.Kwok.NodeStatusInterval, "How often kwok rewrites each kwok node's status (up to 10% more at random); its Lease is renewed every 10 s regardless, as a kubelet's.")
	fs.StringVar(&o.KwokBinary, "kwok", o.KwokBinary, "Path of the kwok binary (--kwok-nodes). Default: next to local-up, then $PATH.")
	fs.Var(cliflag.NewMapStringBool(&o.RealNodeFeatureGates), "real-node-feature-gates", "The real kubelets' --feature-gates, e.g. WatchListClient=false: a kubelet whose client lists its pods first (rv=0), as kubelets of 1.34 and older do.")
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
	if o.SecurePort < 0 || o.SecurePort+o.APIServers-1 > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port=%d: out of range", o.SecurePort))
	}
	if ip := net.ParseIP(o.BindAddress); ip == nil || !ip.IsLoopback() {
		errs = append(errs, fmt.Errorf("--bind-address=%q: local-up listens on loopback only", o.BindAddress))
	}
	if o.ControllerQPS < 0 {
		errs = append(errs, fmt.Errorf("--controller-kube-api-qps=%v: must not be negative", o.ControllerQPS))
	}
	if o.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--ready-timeout=%s: must be positive", o.ReadyTimeout))
	}
	if len(o.APIServerEtcdServers) > o.APIServers || len(o.APIServerArgs) > o.APIServers {
		errs = append(errs, fmt.Errorf("per-apiserver etcd servers (%d) or flags (%d) for more than --apiservers=%d", len(o.APIServerEtcdServers), len(o.APIServerArgs), o.APIServers))
	}
	errs = append(errs, o.validateNodes()...)
	errs = append(errs, o.validateRealNodes()...)
	errs = append(errs, o.Kwok.Validate()...)
	if o.Kwok.Nodes > 0 {
		overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
		if o.Nodes > 0 && overlap(o.NodeNamePrefix, o.Kwok.NamePrefix) {
			errs = append(errs, fmt.Errorf("--kwok-node-name-prefix=%q and --node-name-prefix=%q overlap: a node name could be both kinds", o.Kwok.NamePrefix, o.NodeNamePrefix))
		}
		if o.RealNodes > 0 && overlap(RealNodeNamePrefix, o.Kwok.NamePrefix) {
			errs = append(errs, fmt.Errorf("--kwok-node-name-prefix=%q and the real nodes' %q overlap", o.Kwok.NamePrefix, RealNodeNamePrefix))
		}
	}
	for _, flag := range []string{"etcd-servers", "secure-port", "bind-address"} {
		if HasFlag(o.PassThrough, flag) {
			errs = append(errs, fmt.Errorf("--%s is local-up's own flag; give it before any kube-apiserver flags", flag))
		}
	}
	return errs
}

func (o *Options) validateNodes() []error {
	var errs []error
	if o.Nodes < 0 || o.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("--nodes=%d: use 0 to %d (each hollow node is a process of its own; docs/hollow-nodes.md)", o.Nodes, MaxNodes))
		return errs // the other node checks would only repeat it
	}
	if o.Nodes > 0 {
		for _, name := range []string{o.NodeName(0), o.NodeName(o.Nodes - 1)} {
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("--node-name-prefix=%q: node name %q is not valid: %s", o.NodeNamePrefix, name, msgs[0]))
				break
			}
		}
	}
	if o.KubeletPort != 0 && (o.KubeletPort < 1 || o.KubeletPort+max(o.Nodes, 1)-1 > 65535) {
		errs = append(errs, fmt.Errorf("--kubelet-port=%d: out of range for %d node(s); 0 picks free ports", o.KubeletPort, o.Nodes))
	}
	if o.NodeAPIServer < 0 || o.NodeAPIServer > o.APIServers {
		errs = append(errs, fmt.Errorf("--node-apiserver=%d: use 1 to --apiservers=%d, or 0 to spread the nodes", o.NodeAPIServer, o.APIServers))
	}
	names := make([]string, 0, len(o.NodeAPIServerOverrides))
	for name := range o.NodeAPIServerOverrides {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := o.NodeAPIServerOverrides[name]
		if _, ok := o.nodeIndex(name); !ok && !o.isRealNode(name) {
			errs = append(errs, fmt.Errorf("--node-apiserver-overrides: no node %q among the %d hollow node(s) %s and %d real node(s)", name, o.Nodes, o.nodeRange(), o.RealNodes))
			continue
		}
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > o.APIServers {
			errs = append(errs, fmt.Errorf("--node-apiserver-overrides: %s=%s: use 1 to --apiservers=%d", name, v, o.APIServers))
		}
	}
	return errs
}

// NodeName is the name of hollow node i.
func (o *Options) NodeName(i int) string { return o.NodeNamePrefix + strconv.Itoa(i) }

func (o *Options) nodeIndex(name string) (int, bool) {
	for i := 0; i < o.Nodes; i++ {
		if o.NodeName(i) == name {
			return i, true
		}
	}
	return 0, false
}

func (o *Options) nodeRange() string {
	switch o.Nodes {
	case 0:
		return "(--nodes=0)"
	case 1:
		return "(" + o.NodeName(0) + ")"
	default:
		return "(" + o.NodeName(0) + " to " + o.NodeName(o.Nodes-1) + ")"
	}
}

func (o *Options) isRealNode(name string) bool {
	for i := 0; i < o.RealNodes; i++ {
		if RealNodeName(i) == name {
			return true
		}
	}
	return false
}

// RealNodeAPIServerIndex is the 0-based apiserver that real node i talks
// to at start: its override, else --node-apiserver, else the first. It
// assumes Validate passed.
func (o *Options) RealNodeAPIServerIndex(i int) int {
	if v, ok := o.NodeAPIServerOverrides[RealNodeName(i)]; ok {
		n, _ := strconv.Atoi(v)
		return n - 1
	}
	if o.NodeAPIServer > 0 {
		return o.NodeAPIServer - 1
	}
	return 0
}

// NodeAPIServerIndex is the 0-based apiserver that hollow node i talks to.
// It assumes Validate passed.
func (o *Options) NodeAPIServerIndex(i int) int {
	if v, ok := o.NodeAPIServerOverrides[o.NodeName(i)]; ok {
		n, _ := strconv.Atoi(v)
		return n - 1
	}
	if o.NodeAPIServer > 0 {
		return o.NodeAPIServer - 1
	}
	return i % o.APIServers
}
