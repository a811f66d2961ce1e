package localup

// Hollow nodes: kubemark --morph=kubelet, the real kubelet code on a fake
// container runtime, one child process per node, each with its own
// system:node:<name> credential, kubelet port and kubeconfig.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Node is one supervised hollow node.
type Node struct {
	*Process
	// NodeName is the Node object's name, also the kubelet's identity
	// (system:node:<NodeName>).
	NodeName string
	// APIServer is the index in Cluster.APIServers of the apiserver it
	// talks to.
	APIServer int
	// KubeletPort is the kubelet's https port.
	KubeletPort int
	// Kubeconfig is the file the kubelet talks to its apiserver with.
	Kubeconfig string
	// Started is when the process was started; a Ready condition from
	// before then belongs to an earlier run.
	Started time.Time

	rootDir string // learnt from the log; "" until then
}

// kubemark makes its kubelet's root directory itself, always under /tmp
// (test/utils.MakeTempDirOrDie), and logs where. Its fake container runtime
// listens on /tmp/kubelet_remote_<random>.sock, which it never removes (a
// SIGTERM ends kubemark at once) and never logs. local-up removes the root
// directories, and those runtime sockets that appeared while its nodes
// started and that nothing listens on any more, when the nodes stop. It
// records both under the data directory, so that a run that was killed is
// cleaned up by the next one. Only paths of exactly these shapes are ever
// removed.
var (
	rootDirLine = regexp.MustCompile(`Using (/tmp/hollow-kubelet\.[0-9A-Za-z]+) as root dir for hollow-kubelet`)
	rootDirPath = regexp.MustCompile(`^/tmp/hollow-kubelet\.[0-9A-Za-z]+$`)
	runtimeSock = regexp.MustCompile(`^/tmp/kubelet_remote_[0-9]+\.sock$`)
)

// runtimeSocketGlob finds the fake runtimes' sockets.
const runtimeSocketGlob = "/tmp/kubelet_remote_*.sock"

func (c *Cluster) startNode(i int, binary string, port int) (*Node, error) {
	name := c.Options.NodeName(i)
	user := NodeUser(name)
	// The Node authorizer and NodeRestriction admission know a kubelet by
	// this exact subject.
	if err := c.PKI.EnsureClient("node-"+name, user, []string{NodesGroup}); err != nil {
		return nil, err
	}
	api := c.Options.NodeAPIServerIndex(i)
	kubeconfig := filepath.Join(c.dataDir, "kubeconfigs", name+".kubeconfig")
	if err := WriteClientKubeconfig(kubeconfig, c.APIServers[api].URL, c.PKI, "node-"+name, user); err != nil {
		return nil, err
	}
	args := []string{
		"--morph=kubelet",
		"--name=" + name,
		"--kubeconfig=" + kubeconfig,
		"--kubelet-port=" + strconv.Itoa(port),
		// kubemark binds its kubelet ports on every address and serves them
		// over plain HTTP with no authentication (it gives the kubelet no
		// TLS options and no authenticator; no flag changes that). The
		// read-only port would be a second such port: leave it off.
		"--kubelet-read-only-port=0",
		// The fake runtime's image service: there is no containerd here.
		"--use-host-image-service=false",
	}
	started := time.Now()
	env := withoutIPTables(os.Environ(), isExecutable)
	p, err := startProcess(name, binary, filepath.Join(c.dataDir, "logs", name+".log"), args, env, false)
	if err != nil {
		return nil, err
	}
	c.track(p)
	return &Node{Process: p, NodeName: name, APIServer: api, KubeletPort: port, Kubeconfig: kubeconfig, Started: started}, nil
}

// RootDir is the kubelet's root directory, once kubemark has logged it.
func (n *Node) RootDir() string {
	if n.rootDir == "" {
		if data, err := os.ReadFile(n.LogPath); err == nil {
			if m := rootDirLine.FindSubmatch(data); m != nil {
				n.rootDir = string(m[1])
			}
		}
	}
	return n.rootDir
}

// runtimeSockets lists the fake runtimes' sockets now in /tmp.
func runtimeSockets() map[string]bool {
	paths, _ := filepath.Glob(runtimeSocketGlob)
	set := make(map[string]bool, len(paths))
	for _, p := range paths {
		set[p] = true
	}
	return set
}

func (c *Cluster) leftoverRecord() string { return filepath.Join(c.dataDir, "nodes", "leftovers") }

// nodeLeftovers are the nodes' root directories and the runtime sockets
// that appeared since c.socketsBefore.
func (c *Cluster) nodeLeftovers() []string {
	var paths []string
	for _, n := range c.Nodes {
		if dir := n.RootDir(); dir != "" {
			paths = append(paths, dir)
		}
	}
	var socks []string
	for p := range runtimeSockets() {
		if !c.socketsBefore[p] {
			socks = append(socks, p)
		}
	}
	sort.Strings(socks)
	return append(paths, socks...)
}

// recordLeftovers notes, once the nodes are Ready, what they will leave
// behind, for removeLeftovers and a later run's cleanStaleLeftovers.
func (c *Cluster) recordLeftovers() {
	c.leftovers = c.nodeLeftovers()
	if len(c.leftovers) > 0 {
		_ = os.WriteFile(c.leftoverRecord(), []byte(strings.Join(c.leftovers, "\n")+"\n"), 0o644)
	}
}

// removeLeftovers removes what the stopped nodes left behind, and the
// record.
func (c *Cluster) removeLeftovers() {
	if len(c.Nodes) == 0 {
		return
	}
	paths := c.leftovers
	if paths == nil {
		// Start failed before the nodes were Ready.
		paths = c.nodeLeftovers()
	}
	removeLeftovers(paths)
	_ = os.Remove(c.leftoverRecord())
}

// cleanStaleLeftovers removes what the nodes of a run that did not stop
// cleanly left behind.
func (c *Cluster) cleanStaleLeftovers() {
	if data, err := os.ReadFile(c.leftoverRecord()); err == nil {
		removeLeftovers(strings.Fields(string(data)))
	}
	_ = os.Remove(c.leftoverRecord())
}

// removeLeftovers removes kubelet root directories, and runtime sockets
// that nothing listens on: another user's hollow node that started in the
// same moments keeps its socket.
func removeLeftovers(paths []string) {
	for _, p := range paths {
		switch {
		case rootDirPath.MatchString(p):
			_ = os.RemoveAll(p)
		case runtimeSock.MatchString(p) && !listening(p):
			_ = os.Remove(p)
		}
	}
}

// listening reports whether a process accepts connections on the unix
// socket at path.
func listening(path string) bool {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// waitNodesReady waits until every hollow node's Node object is Ready with
// a heartbeat from this run. One LIST per poll, whatever the node count.
func (c *Cluster) waitNodesReady(ctx context.Context, cs kubernetes.Interface) error {
	started := make(map[string]time.Time, len(c.Nodes))
	for _, n := range c.Nodes {
		started[n.NodeName] = n.Started
	}
	return c.waitNamedNodesReady(ctx, cs, fmt.Sprintf("%d hollow node(s) Ready", len(c.Nodes)), started)
}

// waitRealNodesReady is waitNodesReady for the real nodes.
func (c *Cluster) waitRealNodesReady(ctx context.Context, cs kubernetes.Interface) error {
	started := make(map[string]time.Time, len(c.RealNodes))
	for _, n := range c.RealNodes {
		started[n.NodeName] = n.Started
	}
	return c.waitNamedNodesReady(ctx, cs, fmt.Sprintf("%d real node(s) Ready", len(c.RealNodes)), started)
}

// waitNamedNodesReady waits until each named Node is Ready with a
// heartbeat no older than its start.
func (c *Cluster) waitNamedNodesReady(ctx context.Context, cs kubernetes.Interface, what string, want map[string]time.Time) error {
	return c.waitFor(ctx, what, func() (bool, string) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := map[string]bool{}
		why := map[string]string{}
		for i := range list.Items {
			node := &list.Items[i]
			started, ok := want[node.Name]
			if !ok {
				continue
			}
			ok, reason := nodeReadySince(node, started)
			ready[node.Name] = ok
			why[node.Name] = reason
		}
		var notReady []string
		for name := range want {
			if !ready[name] {
				r := why[name]
				if r == "" {
					r = "not registered"
				}
				notReady = append(notReady, name+": "+r)
			}
		}
		if len(notReady) == 0 {
			return true, ""
		}
		sort.Strings(notReady)
		if len(notReady) > 5 {
			notReady = append(notReady[:5], fmt.Sprintf("and %d more", len(notReady)-5))
		}
		return false, fmt.Sprintf("%d/%d Ready; %s", len(want)-len(notReady), len(want), strings.Join(notReady, "; "))
	})
}

// nodeReadySince reports whether node's Ready condition is True with a
// heartbeat no older than started (to the second, the API's precision).
func nodeReadySince(node *corev1.Node, started time.Time) (bool, string) {
	for _, cond := range node.Status.Conditions {
		if cond.Type != corev1.NodeReady {
			continue
		}
		if cond.Status != corev1.ConditionTrue {
			return false, fmt.Sprintf("Ready=%s (%s)", cond.Status, cond.Reason)
		}
		if cond.LastHeartbeatTime.Time.Before(started.Truncate(time.Second)) {
			return false, "Ready, but from before this run"
		}
		return true, ""
	}
	return false, "no Ready condition yet"
}

// RestartNode stops hollow node i and starts a new kubemark process with
// the same name, kubelet port and kubeconfig, as after a node reboot: a new
// kubelet, an empty fake runtime and a new root directory (the old one is
// removed). It does not wait for the node to be Ready: the apiserver it
// talks to may be unable to answer (lab/test/demo59848).
func (c *Cluster) RestartNode(i int) (*Node, error) {
	old := c.Nodes[i]
	old.Stop(c.Options.ShutdownGrace)
	if dir := old.RootDir(); dir != "" {
		removeLeftovers([]string{dir})
	}
	// The new process truncates the log; keep the old one beside it.
	_ = os.Rename(old.LogPath, old.LogPath+".before-restart")
	n, err := c.startNode(i, c.bins.kubemark, old.KubeletPort)
	if err != nil {
		return nil, err
	}
	c.Nodes[i] = n
	// Stop works out the leftovers again, the new node's included.
	c.leftovers = nil
	return n, nil
}

// iptablesCommands are the programs the kubelet's iptables client runs
// (k8s.io/kubernetes/pkg/util/iptables); it is present when they are.
var iptablesCommands = []string{"iptables", "ip6tables", "iptables-save", "ip6tables-save", "iptables-restore", "ip6tables-restore"}

// withoutIPTables returns environ with PATH stripped of every directory
// that holds one of iptablesCommands (isExecutable tells). A hollow
// kubelet run as root otherwise adds KUBE-IPTABLES-HINT, KUBE-FIREWALL
// (with jumps from INPUT and OUTPUT) and KUBE-KUBELET-CANARY chains to the
// host's iptables, re-adds them every minute when they go, and leaves them
// behind: it has a fake runtime and no pod network, so the rules protect
// nothing, and kubemark has no flag for the kubelet's
// makeIPTablesUtilChains. Without iptables on its PATH the kubelet logs
// "No iptables support on this system" and goes on; nothing else a hollow
// kubelet runs lives there.
func withoutIPTables(environ []string, isExecutable func(path string) bool) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			out = append(out, kv)
			continue
		}
		var kept []string
		for _, dir := range filepath.SplitList(v) {
			if !slices.ContainsFunc(iptablesCommands, func(cmd string) bool { return isExecutable(filepath.Join(dir, cmd)) }) {
				kept = append(kept, dir)
			}
		}
		out = append(out, "PATH="+strings.Join(kept, string(filepath.ListSeparator)))
	}
	return out
}

// isExecutable reports whether path is a file someone may execute.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
