package realnode

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"
)

// Defaults of Options.
const (
	DefaultNodeIP      = "10.200.0.1"
	DefaultPodCIDR     = "10.244.0.0/24"
	DefaultBridge      = "freshcache0"
	DefaultKubeletPort = 10250
	DefaultHealthzPort = 10248
	// kube-proxy's, on 127.0.0.1.
	DefaultProxyHealthzPort = 10256
	DefaultProxyMetricsPort = 10249
)

// ErrInvalidOptions is wrapped by Validate's errors.
var ErrInvalidOptions = errors.New("realnode: invalid options")

// Options configure one real node. Zero values of the fields that have
// defaults mean the defaults.
type Options struct {
	// Dir holds everything of the node: configuration, containerd's root
	// and state, the kubelet's root, pod logs, images and the undo journal.
	Dir string
	// NodeName is the Node object's name; the kubelet's identity is
	// system:node:<NodeName>.
	NodeName string
	// NodeIP is the node's InternalIP, added to lo for the run (the kubelet
	// needs an address that is not loopback, and this kernel has no dummy
	// devices). The kubelet serves on it only.
	NodeIP string
	// PodCIDR is the pods' network on the CNI bridge.
	PodCIDR string
	// Bridge is the CNI bridge device's name.
	Bridge string
	// KubeletPort and HealthzPort are the kubelet's https port (on NodeIP)
	// and its /healthz port (on 127.0.0.1).
	KubeletPort, HealthzPort int

	// Kubeconfig is the kubelet's kubeconfig (system:node:<NodeName>).
	Kubeconfig string
	// KubeProxyBinary, when set, runs kube-proxy (iptables mode) with
	// KubeProxyKubeconfig (system:kube-proxy), its /healthz and /metrics
	// on ProxyHealthzPort and ProxyMetricsPort of 127.0.0.1.
	KubeProxyBinary, KubeProxyKubeconfig string
	ProxyHealthzPort, ProxyMetricsPort   int
	// CACert verifies the clients of the kubelet's https port (the
	// apiserver's kubelet client certificate).
	CACert string
	// ServingCert and ServingKey are the kubelet's serving credential,
	// valid for NodeIP and NodeName.
	ServingCert, ServingKey string

	// KubeletBinary is the kubelet to run; PauseBinary the statically
	// linked pause program packed into the sandbox image; BusyboxBinary
	// the statically linked busybox packed into the busybox image.
	KubeletBinary, PauseBinary, BusyboxBinary string
	// CoreDNSBinary, when set, is packed into CoreDNSImage (the caller
	// deploys CoreDNS); ClusterDNS is the kubelet's clusterDNS, the DNS
	// Service's IP ("" for the host's resolv.conf).
	CoreDNSBinary, ClusterDNS string
	// AgnhostBinary, when set, is the statically linked agnhost program
	// (k8s.io/kubernetes/test/images/agnhost) packed into AgnhostImage,
	// the image most of upstream's e2e tests run; the image also needs
	// curl and dig from Debian (installed with the other packages).
	AgnhostBinary string
	// CNIBinDir holds the CNI plugins (Debian's containernetworking-plugins).
	CNIBinDir string
	// Install lets Prepare run apt-get for missing packages.
	Install bool

	// Start runs a supervised child process (containerd, the kubelet).
	Start StartFunc
	// ReadyTimeout bounds each wait: containerd's socket, the kubelet's
	// /healthz.
	ReadyTimeout time.Duration
	// ShutdownGrace is how long containerd and the kubelet may take to
	// stop.
	ShutdownGrace time.Duration
	// KubeletVerbosity is the kubelet's --v.
	KubeletVerbosity int
	// KubeletFeatureGates are the kubelet's --feature-gates. Kube binaries
	// hand their gates to client-go too, so WatchListClient=false here
	// gives a kubelet that lists first, as kubelets of 1.34 and older do.
	KubeletFeatureGates map[string]bool
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Command is how the user started local-up, for the message that
	// tells a non-root user what to run instead.
	Command []string
}

// StartFunc starts a child process called name, logging to a file of its
// own, and supervises it: a child that exits on its own ends the run.
type StartFunc func(name, binary string, args []string) (Child, error)

// Child is a supervised process.
type Child interface {
	Pid() int
	// Done is closed once the process has exited.
	Done() <-chan struct{}
	// ExitError says how it ended, once Done is closed.
	ExitError() error
	// Stop sends SIGTERM and kills it after grace.
	Stop(grace time.Duration)
	// TailLog is the end of its log, for error messages.
	TailLog(lines int) string
}

func (o *Options) setDefaults() {
	if o.NodeIP == "" {
		o.NodeIP = DefaultNodeIP
	}
	if o.PodCIDR == "" {
		o.PodCIDR = DefaultPodCIDR
	}
	if o.Bridge == "" {
		o.Bridge = DefaultBridge
	}
	if o.KubeletPort == 0 {
		o.KubeletPort = DefaultKubeletPort
	}
	if o.HealthzPort == 0 {
		o.HealthzPort = DefaultHealthzPort
	}
	if o.ProxyHealthzPort == 0 {
		o.ProxyHealthzPort = DefaultProxyHealthzPort
	}
	if o.ProxyMetricsPort == 0 {
		o.ProxyMetricsPort = DefaultProxyMetricsPort
	}
	if o.CNIBinDir == "" {
		o.CNIBinDir = "/usr/lib/cni"
	}
	if o.BusyboxBinary == "" {
		o.BusyboxBinary = "/bin/busybox"
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 30 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// Validate reports every problem with the options (defaults applied).
func (o *Options) Validate() error {
	o.setDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		bad("Dir %q must be an absolute path", o.Dir)
	} else if sock := (layout{dir: o.Dir}).containerdSocket(); len(sock) > maxSocketPath {
		bad("containerd's socket %s is %d bytes, over the %d that unix sockets allow: use a shorter --data-dir", sock, len(sock), maxSocketPath)
	} else if sock := (layout{dir: o.Dir}).podResourcesSocket(); len(sock) > maxUnixPath {
		bad("the kubelet's pod-resources socket %s may be %d bytes, over the %d that unix sockets allow: use a shorter --data-dir", sock, len(sock), maxUnixPath)
	}
	if o.NodeName == "" {
		bad("NodeName is empty")
	}
	ip := net.ParseIP(o.NodeIP)
	if ip == nil || ip.To4() == nil || ip.IsLoopback() || ip.IsUnspecified() {
		bad("node IP %q: want an IPv4 address outside 127.0.0.0/8", o.NodeIP)
	}
	_, pods, err := net.ParseCIDR(o.PodCIDR)
	switch {
	case err != nil || pods.IP.To4() == nil:
		bad("pod CIDR %q: want an IPv4 CIDR", o.PodCIDR)
	case ip != nil && pods.Contains(ip):
		bad("node IP %s is inside the pod CIDR %s", o.NodeIP, o.PodCIDR)
	default:
		if ones, _ := pods.Mask.Size(); ones > 28 {
			bad("pod CIDR %s is too small: want /28 or larger", o.PodCIDR)
		}
	}
	if l := len(o.Bridge); l == 0 || l > 15 {
		bad("bridge name %q: want 1 to 15 characters", o.Bridge)
	}
	for _, p := range []struct {
		name string
		port int
	}{{"kubelet port", o.KubeletPort}, {"kubelet healthz port", o.HealthzPort}, {"kube-proxy healthz port", o.ProxyHealthzPort}, {"kube-proxy metrics port", o.ProxyMetricsPort}} {
		if p.port < 1 || p.port > 65535 {
			bad("%s %d is out of range", p.name, p.port)
		}
	}
	seen := map[int]bool{}
	for _, p := range []int{o.KubeletPort, o.HealthzPort, o.ProxyHealthzPort, o.ProxyMetricsPort} {
		if seen[p] {
			bad("port %d is given twice (kubelet, its healthz, kube-proxy's healthz and metrics need four)", p)
		}
		seen[p] = true
	}
	if o.KubeProxyBinary != "" && o.KubeProxyKubeconfig == "" {
		bad("KubeProxyKubeconfig is empty")
	}
	for name, v := range map[string]string{"Kubeconfig": o.Kubeconfig, "CACert": o.CACert, "ServingCert": o.ServingCert, "ServingKey": o.ServingKey, "KubeletBinary": o.KubeletBinary, "PauseBinary": o.PauseBinary} {
		if v == "" {
			bad("%s is empty", name)
		}
	}
	if o.Start == nil {
		bad("Start is nil")
	}
	return errors.Join(errs...)
}
