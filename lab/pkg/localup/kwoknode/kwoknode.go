package kwoknode

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxNodes bounds Options.Nodes: kwok holds about 10,000 nodes in one
// process, far more than one apiserver on 2 cores serves.
const MaxNodes = 10000

// ManagedLabel marks the nodes kwok manages (its
// --manage-nodes-with-label-selector); a node without it is left alone,
// so hollow and real nodes can run beside kwok's.
const ManagedLabel = "freshcache.dev/kwok"

// KubeletVersion is what a kwok node reports: the release of the rest of
// the cluster, so version-skew checks treat it as a current kubelet.
const KubeletVersion = "v1.37.2"

// Options describe the kwok nodes of one cluster.
type Options struct {
	// Nodes is how many nodes kwok simulates.
	Nodes int
	// NamePrefix names node i NamePrefix+i.
	NamePrefix string
	// PodCIDR is where kwok takes pod IPs from. It must hold every pod of
	// the run and stay clear of the Service range.
	PodCIDR string
	// NodeIPBase is node 0's InternalIP; node i adds i.
	NodeIPBase string
	// NodeLeaseDurationSeconds is each node Lease's duration; kwok renews
	// it every quarter of that, as a kubelet does.
	NodeLeaseDurationSeconds int
	// NodeStatusInterval is how often kwok rewrites a Ready node's status
	// (its heartbeat), with up to 10% more at random.
	NodeStatusInterval time.Duration
	// PodsPerNode is the pod capacity each node reports.
	PodsPerNode int
}

// NewOptions returns the defaults: a kubelet's lease and status periods and
// capacity, and no nodes.
func NewOptions() Options {
	return Options{
		NamePrefix:               "kwok-",
		PodCIDR:                  "10.64.0.0/10",
		NodeIPBase:               "10.96.0.1",
		NodeLeaseDurationSeconds: 40,
		NodeStatusInterval:       5 * time.Minute,
		PodsPerNode:              110,
	}
}

// Validate reports every problem with the options.
func (o Options) Validate() []error {
	var errs []error
	if o.Nodes < 0 || o.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("--kwok-nodes=%d: use 0 to %d", o.Nodes, MaxNodes))
	}
	if o.NamePrefix == "" {
		errs = append(errs, errors.New("kwok node name prefix must not be empty"))
	}
	if _, n, err := net.ParseCIDR(o.PodCIDR); err != nil || n.IP.To4() == nil {
		errs = append(errs, fmt.Errorf("kwok pod CIDR %q: want an IPv4 CIDR", o.PodCIDR))
	}
	if ip := net.ParseIP(o.NodeIPBase).To4(); ip == nil {
		errs = append(errs, fmt.Errorf("kwok node IP base %q: want an IPv4 address", o.NodeIPBase))
	} else if _, err := addToIPv4(ip, max(o.Nodes, 0)); err != nil {
		errs = append(errs, err)
	}
	if o.NodeLeaseDurationSeconds < 4 {
		errs = append(errs, fmt.Errorf("kwok node lease duration %ds: at least 4 s (renewed every quarter)", o.NodeLeaseDurationSeconds))
	}
	if o.NodeStatusInterval < time.Second {
		errs = append(errs, fmt.Errorf("kwok node status interval %s: at least 1s", o.NodeStatusInterval))
	}
	if o.PodsPerNode < 1 {
		errs = append(errs, fmt.Errorf("kwok pods per node %d: at least 1", o.PodsPerNode))
	}
	return errs
}

// NodeName is node i's name.
func (o Options) NodeName(i int) string { return o.NamePrefix + strconv.Itoa(i) }

// NodeIndex is the i of a name NodeName gives, or -1 for any other name.
func (o Options) NodeIndex(name string) int {
	rest, ok := strings.CutPrefix(name, o.NamePrefix)
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return -1
	}
	return i
}

// Node is node i as local-up creates it: the label kwok selects it by, a
// kubelet's capacity and identity, and no conditions (kwok's first stage
// makes it Ready). taints are its spec's taints.
func (o Options) Node(i int, taints []corev1.Taint) (*corev1.Node, error) {
	ip, err := addToIPv4(net.ParseIP(o.NodeIPBase).To4(), i)
	if err != nil {
		return nil, err
	}
	name := o.NodeName(i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   *resource.NewQuantity(int64(o.PodsPerNode), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				ManagedLabel:           "true",
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
			},
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: ip.String()},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:            "amd64",
				OperatingSystem:         "linux",
				KubeletVersion:          KubeletVersion,
				ContainerRuntimeVersion: "kwok://v0.8.0",
				KernelVersion:           "kwok",
				OSImage:                 "kwok",
			},
		},
	}, nil
}

// addToIPv4 is ip+n, refused when it leaves ip's /8 (a typo, or more
// nodes than the range was meant for).
func addToIPv4(ip net.IP, n int) (net.IP, error) {
	if ip == nil || len(ip) != net.IPv4len {
		return nil, fmt.Errorf("kwok node IP base: not IPv4")
	}
	v := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
	w := v + uint32(n)
	if n < 0 || w>>24 != v>>24 {
		return nil, fmt.Errorf("kwok node IP base %s: %d nodes leave its /8", ip, n)
	}
	return net.IPv4(byte(w>>24), byte(w>>16), byte(w>>8), byte(w)).To4(), nil
}

// Args are kwok's command line: the nodes it manages, its configuration
// file (Config), the kubeconfig it acts with, and serverAddress for its
// /healthz and /metrics (empty: none).
func (o Options) Args(kubeconfig, configPath, serverAddress string) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + configPath,
		"--manage-nodes-with-label-selector=" + ManagedLabel + "=true",
		"--cidr=" + o.PodCIDR,
		"--node-lease-duration-seconds=" + strconv.Itoa(o.NodeLeaseDurationSeconds),
	}
	if serverAddress != "" {
		args = append(args, "--server-address="+serverAddress)
	}
	return args
}
