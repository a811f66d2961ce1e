package localup

// Real nodes (--real-nodes): containerd and the upstream kubelet with real
// pods, beside the hollow nodes (package realnode does the node; this file
// gives it credentials and a place in the cluster's start and stop).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

// MaxRealNodes bounds --real-nodes: one node IP, one bridge and one set of
// kubelet ports per machine for now.
const MaxRealNodes = 1

// RealNodeNamePrefix names real node i RealNodeNamePrefix+i.
const RealNodeNamePrefix = "real-"

// The apiserver's identity towards kubelets (--kubelet-client-certificate),
// as kubeadm names it; kubeletAPIAdminBinding gives it the bootstrap role
// system:kubelet-api-admin, which the kubelets' webhook authorizer asks
// about for logs, exec and port-forward.
const (
	kubeletClientName      = "apiserver-kubelet-client"
	KubeletClientUser      = "kube-apiserver-kubelet-client"
	kubeletAPIAdminBinding = "freshcache:kube-apiserver-kubelet-api-admin"
	kubeProxyName          = "kube-proxy"
	KubeProxyUser          = "system:kube-proxy"
)

// RealNode is a real node in the ready file.
type RealNode struct {
	*realnode.Node
	NodeName string
	NodeIP   string
	// APIServer is the 0-based apiserver its kubelet talks to now.
	APIServer  int
	Kubeconfig string
	// Started is when its current kubelet started.
	Started time.Time
}

func (o *Options) validateRealNodes() []error {
	var errs []error
	if o.RealNodes < 0 || o.RealNodes > MaxRealNodes {
		errs = append(errs, fmt.Errorf("--real-nodes=%d: use 0 (hollow nodes only) or 1: one real node (containerd and a kubelet) per machine for now", o.RealNodes))
	}
	if ip := net.ParseIP(o.RealNodeIP); o.RealNodes > 0 && (ip == nil || ip.To4() == nil || ip.IsLoopback() || ip.IsUnspecified()) {
		errs = append(errs, fmt.Errorf("--real-node-ip=%q: want an IPv4 address outside 127.0.0.0/8 (the kubelet needs an address that is not loopback)", o.RealNodeIP))
	}
	if o.RealNodes > 0 && o.RealNodeDNS && !o.Controllers {
		errs = append(errs, errors.New("--real-node-dns needs --controllers: CoreDNS is a Deployment; give --real-node-dns=false too"))
	}
	if o.RealNodes > 0 && o.RealNodeDNS && !o.RealNodeKubeProxy {
		errs = append(errs, errors.New("--real-node-dns needs --real-node-kube-proxy: pods reach CoreDNS through the kube-dns Service's IP; give --real-node-dns=false too"))
	}
	if o.RealNodes > 0 && o.Nodes > 0 && o.NodeNamePrefix == RealNodeNamePrefix {
		errs = append(errs, fmt.Errorf("--node-name-prefix=%s is the real nodes' prefix; pick another for the hollow nodes", RealNodeNamePrefix))
	}
	return errs
}

// RealNodeName is the name of real node i.
func RealNodeName(i int) string { return RealNodeNamePrefix + strconv.Itoa(i) }

// realNodeAPIServerArgs are the apiserver flags logs, exec and
// port-forward need: a client certificate towards the kubelets, the CA
// their serving certificates are checked against, and their InternalIP
// (the node IP) before their name, which nothing resolves.
func (c *Cluster) realNodeAPIServerArgs() []string {
	if c.Options.RealNodes == 0 {
		return nil
	}
	return []string{
		"--kubelet-client-certificate=" + c.PKI.ClientCert(kubeletClientName),
		"--kubelet-client-key=" + c.PKI.ClientKey(kubeletClientName),
		"--kubelet-certificate-authority=" + c.PKI.CACert(),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
	}
}

// prepareRealNodes writes the real nodes' credentials and runs their
// checks (root, packages, cgroups, addresses, ports) before anything
// starts: a failed check leaves nothing running.
func (c *Cluster) prepareRealNodes(ctx context.Context, out io.Writer) error {
	o := c.Options
	if err := c.PKI.EnsureClient(kubeletClientName, KubeletClientUser, nil); err != nil {
		return err
	}
	kubeProxyKubeconfig := ""
	if o.RealNodeKubeProxy {
		// RBAC's bootstrap policy binds system:node-proxier to this user.
		if err := c.PKI.EnsureClient(kubeProxyName, KubeProxyUser, nil); err != nil {
			return err
		}
		kubeProxyKubeconfig = filepath.Join(c.dataDir, "kubeconfigs", kubeProxyName+".kubeconfig")
	}
	clusterDNS := ""
	if o.RealNodeDNS {
		if err := c.PKI.EnsureClient(coreDNSName, CoreDNSUser, nil); err != nil {
			return err
		}
		clusterDNS = DNSServiceIP
	}
	for i := 0; i < o.RealNodes; i++ {
		name := RealNodeName(i)
		nodeIP := o.RealNodeIP
		if err := c.PKI.EnsureClient("node-"+name, NodeUser(name), []string{NodesGroup}); err != nil {
			return err
		}
		// Recreated when the node IP changed, so the serving certificate
		// always names the address the apiserver dials.
		serving := "kubelet-" + name + "-" + nodeIP
		if err := c.PKI.EnsureServing(serving, []string{nodeIP, name, "localhost", "127.0.0.1"}); err != nil {
			return err
		}
		n, err := realnode.Prepare(ctx, realnode.Options{
			Dir:                 filepath.Join(c.dataDir, "real-nodes", name),
			NodeName:            name,
			NodeIP:              nodeIP,
			Kubeconfig:          filepath.Join(c.dataDir, "kubeconfigs", name+".kubeconfig"),
			CACert:              c.PKI.CACert(),
			ServingCert:         c.PKI.ServingCertFor(serving),
			ServingKey:          c.PKI.ServingKeyFor(serving),
			KubeletBinary:       c.bins.kubelet,
			KubeProxyBinary:     c.bins.kubeProxy,
			KubeProxyKubeconfig: kubeProxyKubeconfig,
			CoreDNSBinary:       c.bins.coredns,
			AgnhostBinary:       c.bins.agnhost,
			ClusterDNS:          clusterDNS,
			PauseBinary:         c.bins.pause,
			Install:             true,
			Start:               c.startRealNodeChild,
			ReadyTimeout:        o.ReadyTimeout,
			ShutdownGrace:       o.ShutdownGrace,
			KubeletVerbosity:    2,
			KubeletFeatureGates: o.RealNodeFeatureGates,
			Out:                 out,
			Command:             os.Args,
		})
		if err != nil {
			return err
		}
		c.RealNodes = append(c.RealNodes, &RealNode{Node: n, NodeName: name, NodeIP: nodeIP, APIServer: o.RealNodeAPIServerIndex(i),
			Kubeconfig: filepath.Join(c.dataDir, "kubeconfigs", name+".kubeconfig")})
	}
	return nil
}

// startRealNodeChild starts containerd or a kubelet as a supervised child
// in a process group of its own: Ctrl-C in the terminal reaches local-up
// only, which then removes the pods before it stops them.
func (c *Cluster) startRealNodeChild(name, binary string, args []string) (realnode.Child, error) {
	p, err := startProcess(name, binary, filepath.Join(c.dataDir, "logs", name+".log"), args, nil, true)
	if err != nil {
		return nil, err
	}
	c.track(p)
	return p, nil
}

// startRealNodes starts every prepared real node against its apiserver
// (RealNodeAPIServerIndex); the caller waits for their Node objects to be
// Ready. kube-proxy and CoreDNS talk to the first apiserver.
func (c *Cluster) startRealNodes(ctx context.Context, admin kubernetes.Interface) error {
	if err := ensureKubeletAPIAdmin(ctx, admin); err != nil {
		return err
	}
	if c.Options.RealNodeDNS {
		if err := WriteClientKubeconfig(c.coreDNSKubeconfig(), c.APIServers[0].URL, c.PKI, coreDNSName, CoreDNSUser); err != nil {
			return err
		}
	}
	if c.Options.RealNodeKubeProxy {
		kc := filepath.Join(c.dataDir, "kubeconfigs", kubeProxyName+".kubeconfig")
		if err := WriteClientKubeconfig(kc, c.APIServers[0].URL, c.PKI, kubeProxyName, KubeProxyUser); err != nil {
			return err
		}
	}
	for _, n := range c.RealNodes {
		user := NodeUser(n.NodeName)
		if err := WriteClientKubeconfig(n.Kubeconfig, c.APIServers[n.APIServer].URL, c.PKI, "node-"+n.NodeName, user); err != nil {
			return err
		}
		n.Started = time.Now()
		if err := n.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// RestartRealNode restarts real node i's kubelet, as on a real machine:
// containerd and the pods' containers keep running, and the new kubelet
// talks to apiserver (0-based) from now on. The old kubelet's log is kept
// beside the new one (.before-restart). It waits for the new kubelet's
// /healthz only: the apiserver may be unable to answer (lab/test/demo59848).
func (c *Cluster) RestartRealNode(ctx context.Context, i, apiserver int) error {
	if i < 0 || i >= len(c.RealNodes) {
		return fmt.Errorf("localup: no real node %d (%d running)", i, len(c.RealNodes))
	}
	if apiserver < 0 || apiserver >= len(c.APIServers) {
		return fmt.Errorf("localup: no apiserver %d (%d running)", apiserver, len(c.APIServers))
	}
	n := c.RealNodes[i]
	if err := WriteClientKubeconfig(n.Kubeconfig, c.APIServers[apiserver].URL, c.PKI, "node-"+n.NodeName, NodeUser(n.NodeName)); err != nil {
		return err
	}
	n.StopKubelet()
	log := filepath.Join(c.dataDir, "logs", "kubelet-"+n.NodeName+".log")
	_ = os.Rename(log, log+".before-restart")
	n.APIServer = apiserver
	n.Started = time.Now()
	return n.StartKubelet(ctx)
}

// coreDNSKubeconfig is CoreDNS's kubeconfig, mounted into its pod.
func (c *Cluster) coreDNSKubeconfig() string {
	return filepath.Join(c.dataDir, "kubeconfigs", coreDNSName+".kubeconfig")
}

// ensureKubeletAPIAdmin binds system:kubelet-api-admin to the apiserver's
// kubelet client identity.
func ensureKubeletAPIAdmin(ctx context.Context, cs kubernetes.Interface) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubeletAPIAdminBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: KubeletClientUser}},
	}
	_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("localup: binding system:kubelet-api-admin to %s: %w", KubeletClientUser, err)
	}
	return nil
}

// stopRealNodes stops the real nodes and undoes their host changes; what
// could not be undone is reported (the next start tries again).
func (c *Cluster) stopRealNodes() {
	for _, n := range c.RealNodes {
		if err := n.Stop(); err != nil {
			fmt.Fprintf(c.out, "real node %s: %v\n", n.NodeName, err)
		}
	}
}

// readyRealNodes describes the real nodes for the ready file.
func (c *Cluster) readyRealNodes() []ReadyRealNode {
	var out []ReadyRealNode
	for _, n := range c.RealNodes {
		r := ReadyRealNode{Name: n.NodeName, NodeIP: n.NodeIP, APIServer: n.APIServer + 1, Kubeconfig: n.Kubeconfig, User: NodeUser(n.NodeName),
			ContainerdSocket: n.ContainerdSocket(), KubeletRoot: n.KubeletRoot()}
		if k := n.Kubelet(); k != nil {
			r.KubeletPID = k.Pid()
		}
		if ct := n.Containerd(); ct != nil {
			r.ContainerdPID = ct.Pid()
		}
		if kp := n.KubeProxy(); kp != nil {
			r.KubeProxyPID = kp.Pid()
		}
		out = append(out, r)
	}
	return out
}

// ReadyRealNode is a real node in the ready file.
type ReadyRealNode struct {
	Name   string `json:"name"`
	NodeIP string `json:"nodeIP"`
	// APIServer is the apiserver (1-based) its kubelet talks to.
	APIServer     int `json:"apiserver"`
	KubeletPID    int `json:"kubeletPID"`
	ContainerdPID int `json:"containerdPID"`
	// KubeProxyPID is 0 with --real-node-kube-proxy=false.
	KubeProxyPID int `json:"kubeProxyPID,omitempty"`
	// ContainerdSocket is the node's containerd (ctr --address, crictl
	// --runtime-endpoint unix://...).
	ContainerdSocket string `json:"containerdSocket"`
	KubeletRoot      string `json:"kubeletRoot"`
	Kubeconfig       string `json:"kubeconfig"`
	User             string `json:"user"`
}

// HollowTaint keeps pods off the hollow nodes while real nodes run: a pod
// that must run for real (kubectl run, logs, exec) lands on a real node,
// and a pod that tolerates it may still go to a hollow one.
var HollowTaint = corev1.Taint{Key: "freshcache.dev/hollow", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// reconcileHollowTaints puts HollowTaint on every hollow and kwok node
// when real nodes run, and takes it off otherwise (a data directory's Node
// objects outlive the run that tainted them). One LIST, and an update per
// node that changes.
func (c *Cluster) reconcileHollowTaints(ctx context.Context, cs kubernetes.Interface) error {
	want := c.Options.RealNodes > 0
	hollow := make(map[string]bool, len(c.Nodes))
	for _, n := range c.Nodes {
		hollow[n.NodeName] = true
	}
	if c.Kwok != nil {
		for _, n := range c.Kwok.Nodes {
			hollow[n] = true
		}
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("localup: listing nodes to taint: %w", err)
	}
	for i := range list.Items {
		node := &list.Items[i]
		if !hollow[node.Name] {
			continue
		}
		kept := node.Spec.Taints[:0:0]
		has := false
		for _, t := range node.Spec.Taints {
			if t.Key == HollowTaint.Key {
				has = true
				continue
			}
			kept = append(kept, t)
		}
		if has == want {
			continue
		}
		if want {
			kept = append(kept, HollowTaint)
		}
		// A merge patch of the whole list: no resourceVersion to conflict
		// with the kubelet's status updates.
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": kept}})
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("localup: tainting hollow node %s: %w", node.Name, err)
		}
	}
	return nil
}
