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
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/pkg/etcdlocal"
	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

const serviceClusterIPRange = "10.0.0.0/24"

// Cluster is a running local cluster.
type Cluster struct {
	Options     *Options
	PKI         PKI
	Etcd        *etcdlocal.Cluster // nil with external etcd
	Endpoints   []string
	APIServers  []*APIServer
	Kubeconfigs []string
	// ControllerManager and Scheduler are nil with --controllers=false.
	ControllerManager *Component
	Scheduler         *Component
	Nodes             []*Node
	// RealNodes are the --real-nodes, each a containerd and a kubelet.
	RealNodes []*RealNode
	// Kwok is the kwok controller of --kwok-nodes, nil without.
	Kwok *Kwok
	// ReadyFile is the path of ready.json, written once Start succeeds.
	ReadyFile string

	dataDir string
	bins    binaries
	// out receives progress and what Stop could not undo.
	out io.Writer
	// exited receives every tracked child once it has exited; it has room
	// for all of them, so no child's watcher ever blocks.
	exited chan *Process
	procs  []*Process
	// socketsBefore are the fake runtime sockets in /tmp before the
	// nodes started; leftovers are the files the nodes leave behind
	// (nodes.go).
	socketsBefore map[string]bool
	leftovers     []string
	// apiserverForward carries pods' connections from the node IP to the
	// first apiserver (forward.go); nil without real nodes.
	apiserverForward *forwarder
}

// binaries are the resolved paths of the programs a run needs.
type binaries struct {
	apiserver, controllerManager, scheduler, kubemark string
	// kubelet, kube-proxy, pause (freshcache-pause) and coredns for
	// --real-nodes.
	kubelet, kubeProxy, pause, coredns, agnhost string
	// kwok for --kwok-nodes.
	kwok string
}

// ports are picked or checked before anything starts, so a busy port
// fails the run before any process is left to clean up.
type ports struct {
	apiservers                   []int
	controllerManager, scheduler int
	kubelets                     []int
}

// Start brings up etcd, the kube-apiservers, the controllers and the hollow
// nodes, waits until all of them are ready and writes the ready file. On
// error everything already started is stopped.
func Start(ctx context.Context, o *Options, out io.Writer) (_ *Cluster, err error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if o.RealNodes > 0 {
		// Before anything is written or started: the answer is a command
		// to run instead.
		if err := realnode.CheckRoot(os.Args); err != nil {
			return nil, err
		}
	}
	bins, err := o.resolveBinaries()
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	pts, err := o.pickPorts()
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{"logs", "pki", "kubeconfigs", "nodes"} {
		if err := os.MkdirAll(filepath.Join(dataDir, dir), 0o755); err != nil {
			return nil, err
		}
	}

	c := &Cluster{
		Options:   o,
		PKI:       PKI{Dir: filepath.Join(dataDir, "pki")},
		ReadyFile: ReadyFilePath(dataDir),
		dataDir:   dataDir,
		bins:      bins,
		out:       out,
		// Every child: apiservers, the two controllers, hollow nodes,
		// containerd, a kubelet and kube-proxy per real node, and kwok.
		exited: make(chan *Process, o.APIServers+2+o.Nodes+3*o.RealNodes+1),
	}
	// A ready file from an earlier run must not be mistaken for this one's.
	if err := os.Remove(c.ReadyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	c.cleanStaleLeftovers()
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.PKI.Ensure(o.apiserverHosts()); err != nil {
		return nil, fmt.Errorf("writing credentials: %w", err)
	}
	if o.RealNodes > 0 {
		if err := c.prepareRealNodes(ctx, out); err != nil {
			return nil, err
		}
		// Pods reach the first apiserver at the node IP (the kubernetes
		// Service's endpoint), through local-up's forwarder (forward.go),
		// so the address must be on lo before the forwarder listens.
		for _, n := range c.RealNodes {
			if err := n.AddNodeIP(ctx); err != nil {
				return nil, err
			}
		}
		port := strconv.Itoa(pts.apiservers[advertisedAPIServer])
		if c.apiserverForward, err = startForwarder(net.JoinHostPort(o.RealNodeIP, port), net.JoinHostPort(o.BindAddress, port)); err != nil {
			return nil, err
		}
	}

	if err := c.startEtcd(ctx, out); err != nil {
		return nil, err
	}
	if err := c.startAPIServers(ctx, bins.apiserver, pts.apiservers, out); err != nil {
		return nil, err
	}
	// local-up's own writes (kwok nodes, the CoreDNS objects) are a setup
	// step, not load: client-go's default 5 requests/s would take 200 s to
	// create 1,000 kwok nodes.
	adminCfg := RESTConfig(c.APIServers[0].URL, c.PKI)
	adminCfg.QPS, adminCfg.Burst = adminQPS, adminQPS
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		return nil, err
	}
	if o.RealNodes > 0 {
		if err := c.waitKubernetesEndpoint(ctx, pts.apiservers[advertisedAPIServer]); err != nil {
			return nil, c.APIServers[advertisedAPIServer].withLog(err)
		}
	}

	if o.Controllers {
		if c.ControllerManager, err = c.startComponent(c.controllerManagerSpec(bins.controllerManager, pts.controllerManager)); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "%s: pid %d, %s, as %s, log %s\n", c.ControllerManager.Name, c.ControllerManager.Pid(), c.ControllerManager.URL, c.ControllerManager.User, c.ControllerManager.LogPath)
		if c.Scheduler, err = c.startComponent(c.schedulerSpec(bins.scheduler, pts.scheduler)); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "%s: pid %d, %s, as %s, log %s\n", c.Scheduler.Name, c.Scheduler.Pid(), c.Scheduler.URL, c.Scheduler.User, c.Scheduler.LogPath)
	}
	// Real nodes first: their undo journal records iptables before any
	// kubelet runs. Hollow kubelets leave the host's iptables alone
	// (withoutIPTables, nodes.go).
	if o.RealNodes > 0 {
		if err := c.startRealNodes(ctx, admin); err != nil {
			return nil, err
		}
	}
	if o.Nodes > 0 {
		c.socketsBefore = runtimeSockets()
	}
	for i := 0; i < o.Nodes; i++ {
		n, err := c.startNode(i, bins.kubemark, pts.kubelets[i])
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
		if o.Nodes <= 10 {
			fmt.Fprintf(out, "%s: pid %d, hollow node on %s, kubelet port %d, log %s\n", n.NodeName, n.Pid(), c.APIServers[n.APIServer].Name, n.KubeletPort, n.LogPath)
		}
	}
	if o.Nodes > 10 {
		fmt.Fprintf(out, "%d hollow nodes %s: kubelet ports %d-%d, logs %s\n", o.Nodes, o.nodeRange(), pts.kubelets[0], pts.kubelets[len(pts.kubelets)-1],
			filepath.Join(dataDir, "logs", o.NodeNamePrefix+"*.log"))
	}
	var kwokStarted time.Time
	if o.Kwok.Nodes > 0 {
		if kwokStarted, err = c.startKwok(ctx, admin, bins.kwok); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "%s: pid %d, %d kwok nodes %s to %s, as %s, config %s, log %s\n", kwokName, c.Kwok.Pid(), o.Kwok.Nodes,
			c.Kwok.Nodes[0], c.Kwok.Nodes[len(c.Kwok.Nodes)-1], KwokUser, c.Kwok.Config, c.Kwok.LogPath)
	}

	if o.Controllers {
		for _, comp := range []*Component{c.ControllerManager, c.Scheduler} {
			if err := c.waitHealthy(ctx, comp); err != nil {
				return nil, err
			}
		}
	}
	if o.Nodes > 0 {
		began := time.Now()
		if err := c.waitNodesReady(ctx, admin); err != nil {
			return nil, err
		}
		c.recordLeftovers()
		fmt.Fprintf(out, "nodes: %d Ready after %s\n", o.Nodes, time.Since(began).Round(100*time.Millisecond))
	}
	if o.Kwok.Nodes > 0 {
		began := time.Now()
		if err := c.waitKwokNodesReady(ctx, admin, kwokStarted); err != nil {
			return nil, c.Kwok.withLog(err)
		}
		fmt.Fprintf(out, "kwok nodes: %d Ready after %s\n", o.Kwok.Nodes, time.Since(began).Round(100*time.Millisecond))
	}
	if o.Nodes > 0 || o.Kwok.Nodes > 0 {
		if err := c.reconcileHollowTaints(ctx, admin); err != nil {
			return nil, err
		}
	}
	if o.RealNodes > 0 {
		began := time.Now()
		if err := c.waitRealNodesReady(ctx, admin); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "real nodes: %d Ready after %s\n", o.RealNodes, time.Since(began).Round(100*time.Millisecond))
		if o.RealNodeDNS {
			if err := c.deployCoreDNS(ctx, admin, out); err != nil {
				return nil, err
			}
		}
	}
	if o.Controllers {
		// What a pod in the default namespace needs from the controllers:
		// its service account (ServiceAccount admission) and the CA bundle
		// its projected token volume mounts.
		if err := c.waitDefaultNamespaceReady(ctx, admin); err != nil {
			return nil, c.ControllerManager.withLog(err)
		}
	}
	if err := c.writeReadyFile(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", c.ReadyFile, err)
	}
	fmt.Fprintf(out, "ready file: %s\n", c.ReadyFile)
	return c, nil
}

func (c *Cluster) startEtcd(ctx context.Context, out io.Writer) error {
	o := c.Options
	if len(o.EtcdServers) > 0 {
		c.Endpoints = o.EtcdServers
		if err := CheckEtcd(ctx, c.Endpoints, o.EtcdReadyTimeout); err != nil {
			return err
		}
		fmt.Fprintf(out, "Using etcd at %s\n", strings.Join(c.Endpoints, ","))
		return nil
	}
	clientPorts, peerPorts := memberPorts(o.EtcdClientPort, o.EtcdMembers), memberPorts(o.EtcdPeerPort, o.EtcdMembers)
	var err error
	c.Etcd, err = etcdlocal.Start(ctx, etcdlocal.Options{
		DataDir:      filepath.Join(c.dataDir, "etcd"),
		Members:      o.EtcdMembers,
		ClientPorts:  clientPorts,
		PeerPorts:    peerPorts,
		ReadyTimeout: o.EtcdReadyTimeout,
		LogFile:      filepath.Join(c.dataDir, "logs", "etcd.log"),
	})
	if errors.Is(err, etcdlocal.ErrPortInUse) {
		return fmt.Errorf("embedded etcd (--etcd-client-port=%d, --etcd-peer-port=%d; member i adds i*10000, 0 picks free ports): %w", o.EtcdClientPort, o.EtcdPeerPort, err)
	}
	if err != nil {
		return err
	}
	c.Endpoints = c.Etcd.Endpoints()
	fmt.Fprintf(out, "etcd: %d member(s) at %s, data in %s, log %s\n", o.EtcdMembers, strings.Join(c.Endpoints, ","),
		filepath.Join(c.dataDir, "etcd"), filepath.Join(c.dataDir, "logs", "etcd.log"))
	return nil
}

func (c *Cluster) startAPIServers(ctx context.Context, binary string, ports []int, out io.Writer) error {
	o := c.Options
	for i, port := range ports {
		name := "kube-apiserver-" + strconv.Itoa(i+1)
		url := "https://" + net.JoinHostPort(o.BindAddress, strconv.Itoa(port))
		kubeconfig := filepath.Join(c.dataDir, "kubeconfig")
		if i > 0 {
			kubeconfig += "-" + strconv.Itoa(i+1)
		}
		if err := WriteKubeconfig(kubeconfig, url, c.PKI); err != nil {
			return err
		}
		s, err := StartAPIServer(name, binary, url, filepath.Join(c.dataDir, "logs", name+".log"), c.apiserverArgs(i, port))
		if err != nil {
			return err
		}
		c.track(s.Process)
		c.APIServers = append(c.APIServers, s)
		c.Kubeconfigs = append(c.Kubeconfigs, kubeconfig)
		fmt.Fprintf(out, "%s: pid %d, %s, log %s\n", name, s.Pid(), url, s.LogPath)
	}
	for _, s := range c.APIServers {
		if err := s.WaitReady(ctx, RESTConfig(s.URL, c.PKI), o.ReadyTimeout); err != nil {
			return s.withLog(err)
		}
	}
	return nil
}

// waitDefaultNamespaceReady waits for the default service account and the
// kube-root-ca.crt ConfigMap in namespace default, which the
// controller-manager's serviceaccount and root-ca-cert-publisher
// controllers create once it holds its leader lease.
func (c *Cluster) waitDefaultNamespaceReady(ctx context.Context, cs kubernetes.Interface) error {
	return c.waitFor(ctx, "the controller-manager to populate namespace default", func() (bool, string) {
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, "service account default: " + reason(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			return false, "configmap kube-root-ca.crt: " + reason(err)
		}
		return true, ""
	})
}

func reason(err error) string {
	if apierrors.IsNotFound(err) {
		return "not created yet"
	}
	return err.Error()
}

// track makes p's exit visible to waitFor and Wait, unless Stop asked for
// it (RestartNode): only a child that exits on its own ends the run.
func (c *Cluster) track(p *Process) {
	c.procs = append(c.procs, p)
	go func() {
		<-p.Done()
		if !p.stopped.Load() {
			c.exited <- p
		}
	}()
}

// waitFor polls cond every 250 ms until it holds. It fails when any child
// exits, ctx is done or the ready timeout passes; the error quotes cond's
// last answer.
func (c *Cluster) waitFor(ctx context.Context, what string, cond func() (bool, string)) error {
	return pollUntil(ctx, c.Options.ReadyTimeout, c.exited, func(p *Process) error { return p.withLog(p.ExitError()) }, cond, func(last string) error {
		return fmt.Errorf("localup: waiting for %s: not done after %s (--ready-timeout); last: %s", what, c.Options.ReadyTimeout, last)
	})
}

// Wait blocks until ctx is done (nil) or a child exits on its own (an
// error with the last lines of its log).
func (c *Cluster) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case p := <-c.exited:
		return p.withLog(p.ExitError())
	}
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

// apiserverArgs are the flags of instance i.
func (c *Cluster) apiserverArgs(i, port int) []string {
	etcd := c.Endpoints
	if i < len(c.Options.APIServerEtcdServers) && len(c.Options.APIServerEtcdServers[i]) > 0 {
		etcd = c.Options.APIServerEtcdServers[i]
	}
	args := []string{
		"--etcd-servers=" + strings.Join(etcd, ","),
	}
	args = append(args, c.Options.apiserverServingArgs(i)...)
	args = append(args, []string{
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.PKI.ServingCert(),
		"--tls-private-key-file=" + c.PKI.ServingKey(),
		"--client-ca-file=" + c.PKI.CACert(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.PKI.ServiceAccountPub(),
		"--service-account-signing-key-file=" + c.PKI.ServiceAccountKey(),
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
	}...)
	args = append(args, c.realNodeAPIServerArgs()...)
	args = append(args, c.Options.PassThrough...)
	if i < len(c.Options.APIServerArgs) {
		args = append(args, c.Options.APIServerArgs[i]...)
	}
	return args
}

// Stop removes the ready file, then stops the hollow nodes and kwok, the real
// nodes (undoing their host changes), the controllers, the apiservers and
// etcd, in that order: each only talks to the ones after it. It is safe to
// call more than once.
func (c *Cluster) Stop() {
	_ = os.Remove(c.ReadyFile)
	grace := c.Options.ShutdownGrace
	stopAll := func(ps []*Process) {
		var wg sync.WaitGroup
		for _, p := range ps {
			wg.Go(func() { p.Stop(grace) })
		}
		wg.Wait()
	}
	var nodes []*Process
	for _, n := range c.Nodes {
		nodes = append(nodes, n.Process)
	}
	if c.Kwok != nil {
		nodes = append(nodes, c.Kwok.Process)
	}
	stopAll(nodes)
	c.removeLeftovers()
	// The real nodes after the hollow ones: nothing that talks to the
	// host's network may run while the undo restores it.
	c.stopRealNodes()
	var controllers []*Process
	for _, comp := range []*Component{c.ControllerManager, c.Scheduler} {
		if comp != nil {
			controllers = append(controllers, comp.Process)
		}
	}
	stopAll(controllers)
	for _, s := range c.APIServers {
		s.Stop(grace)
	}
	if c.apiserverForward != nil {
		c.apiserverForward.Close()
		c.apiserverForward = nil
	}
	if c.Etcd != nil {
		c.Etcd.Close()
		c.Etcd = nil
	}
}
