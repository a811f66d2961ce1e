package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Node is one real node: its containerd and kubelet, and the host changes
// made for them. Prepare, then Start, then Stop; Stop is safe at any point
// and more than once.
type Node struct {
	opts   Options
	layout layout
	images []string

	// state is the undo journal; nil until Start records its first
	// change, and again once Stop undid everything.
	state      *State
	containerd Child
	kubelet    Child
	kubeProxy  Child
}

// systemDirs are directories outside Dir that containerd, the CNI plugins
// or the kubelet create when missing, whatever their configuration says:
// those that did not exist before a run are removed after it.
var systemDirs = []string{
	"/run/containerd",     // the runc v2 shims' sockets (/run/containerd/s)
	"/var/lib/cni",        // libcni's result cache
	"/var/lib/kubelet",    // nothing with --root-dir, but checked
	"/var/log/pods",       // nothing with podLogsDir, but checked
	"/var/log/containers", // the kubelet's links to container logs
	"/etc/cni",
	"/opt/cni",
	"/var/lib/containerd",
	"/opt/containerd",
	"/etc/kubernetes",
}

// Prepare checks everything a node needs before the host is changed:
// root, leftovers of a run that did not stop cleanly (undone here), the
// packages (installed when Options.Install allows), cgroups, addresses and
// ports; and it builds the images once. It changes nothing else on the
// host.
func Prepare(ctx context.Context, o Options) (*Node, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := CheckRoot(o.Command); err != nil {
		return nil, err
	}
	n := &Node{opts: o, layout: layout{dir: o.Dir}}
	if err := n.recover(ctx); err != nil {
		return nil, err
	}
	if err := n.ensurePackages(ctx); err != nil {
		return nil, err
	}
	cgroups, err := kubeletCgroups()
	if err != nil {
		return nil, err
	}
	if err := checkCgroups(cgroups); err != nil {
		return nil, err
	}
	if err := o.checkNetwork(ctx); err != nil {
		return nil, err
	}
	if n.images, err = n.buildImages(); err != nil {
		return nil, err
	}
	return n, nil
}

// recover undoes what a run that did not stop cleanly (killed, crashed)
// recorded, unless that run is still going.
func (n *Node) recover(ctx context.Context) error {
	s, err := loadState(n.opts.Dir)
	if err != nil || s == nil {
		return err
	}
	if s.PID != os.Getpid() && processAlive(s.PID) && isLocalUp(s.PID) {
		return fmt.Errorf("%w: pid %d (%s); stop it first", ErrOtherNode, s.PID, statePath(n.opts.Dir))
	}
	n.logf("undoing what an earlier run left behind (%s)", statePath(n.opts.Dir))
	return undo(ctx, n.opts.Dir, s)
}

// isLocalUp reports whether pid runs a program called local-up (or a
// test binary, which starts nodes too).
func isLocalUp(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	base := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	return base == "local-up" || strings.HasSuffix(base, ".test")
}

// AddNodeIP records what the node is about to change (the undo journal)
// and adds the node IP to lo. The caller does it before the apiserver
// starts when the apiserver is to serve on the node IP too (the
// kubernetes Service's endpoint); Start does it otherwise. On error the
// caller calls Stop.
func (n *Node) AddNodeIP(ctx context.Context) error {
	if n.state != nil {
		return nil
	}
	if err := n.record(ctx); err != nil {
		return err
	}
	return addAddress(ctx, Address{Dev: "lo", CIDR: n.opts.NodeIP + "/32"})
}

// Start adds the node IP unless AddNodeIP did, writes the configuration,
// starts containerd, imports the images and starts the kubelet, then
// waits for the kubelet's /healthz. The caller waits for the Node object
// to be Ready. On error the caller calls Stop.
func (n *Node) Start(ctx context.Context) error {
	if err := n.AddNodeIP(ctx); err != nil {
		return err
	}
	if err := n.writeConfig(); err != nil {
		return err
	}
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	if err := n.importImages(ctx, n.images); err != nil {
		return err
	}
	if err := n.startKubelet(ctx); err != nil {
		return err
	}
	if n.opts.KubeProxyBinary != "" {
		return n.startKubeProxy(ctx)
	}
	return nil
}

// record writes the undo journal before anything changes.
func (n *Node) record(ctx context.Context) error {
	cgroups, err := kubeletCgroups()
	if err != nil {
		return err
	}
	s := &State{
		PID:         os.Getpid(),
		Addresses:   []Address{{Dev: "lo", CIDR: n.opts.NodeIP + "/32"}},
		Links:       []string{n.opts.Bridge},
		Sysctls:     readSysctls(touchedSysctls),
		IPTables:    map[string]string{},
		Cgroups:     cgroups,
		MountRoots:  []string{n.opts.Dir},
		RuncRoot:    n.layout.runcRoot(),
		ShimAddress: n.layout.containerdSocket(),
		PodLogsDir:  n.layout.podLogsDir(),
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		out, err := iptablesSave(ctx, cmd)
		if err != nil {
			return err
		}
		s.IPTables[cmd] = out
	}
	for _, d := range systemDirs {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			s.CreatedDirs = append(s.CreatedDirs, d)
		}
	}
	if err := saveState(n.opts.Dir, s); err != nil {
		return fmt.Errorf("realnode: writing the undo journal: %w", err)
	}
	n.state = s
	return nil
}

func (n *Node) writeConfig() error {
	l := n.layout
	// No pod network exists before containerd starts: allocations left by
	// a run whose pods were killed, not deleted, are stale.
	if err := os.RemoveAll(l.cniIPAMDir()); err != nil {
		return err
	}
	for _, d := range []string{l.containerdDir(), l.cniConfDir(), l.cniIPAMDir(), l.kubeletDir(), l.kubeletRoot(), l.podLogsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	ctrd, err := renderContainerdConfig(l, n.opts.CNIBinDir)
	if err != nil {
		return err
	}
	cni, err := renderCNIConfig(l, n.opts.Bridge, n.opts.PodCIDR)
	if err != nil {
		return err
	}
	kubelet, err := renderKubeletConfig(l, kubeletSettings{
		NodeIP: n.opts.NodeIP, Port: n.opts.KubeletPort, HealthzPort: n.opts.HealthzPort,
		ClientCAFile: n.opts.CACert, TLSCertFile: n.opts.ServingCert, TLSKeyFile: n.opts.ServingKey,
		PodCIDR: n.opts.PodCIDR, ClusterDNS: n.opts.ClusterDNS,
	})
	if err != nil {
		return err
	}
	for path, data := range map[string]string{l.containerdConfig(): ctrd, l.cniConfig(): cni, l.kubeletConfig(): kubelet} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) startContainerd(ctx context.Context) error {
	// A socket left by a killed containerd would make the new one fail.
	_ = os.Remove(n.layout.containerdSocket())
	_ = os.Remove(n.layout.containerdSocket() + ".ttrpc")
	c, err := n.opts.Start("containerd", "/usr/bin/containerd", []string{"--config", n.layout.containerdConfig()})
	if err != nil {
		return err
	}
	n.containerd = c
	n.logf("containerd: pid %d, socket %s", c.Pid(), n.layout.containerdSocket())
	return n.waitChild(ctx, c, "containerd's CRI service", func() (bool, string) {
		return criReady(ctx, n.layout.containerdSocket())
	})
}

func (n *Node) startKubelet(ctx context.Context) error {
	args := kubeletArgs(n.layout, n.opts.NodeName, n.opts.NodeIP, n.opts.Kubeconfig, n.opts.KubeletVerbosity, n.opts.KubeletFeatureGates)
	c, err := n.opts.Start("kubelet-"+n.opts.NodeName, n.opts.KubeletBinary, args)
	if err != nil {
		return err
	}
	n.kubelet = c
	n.logf("kubelet %s: pid %d, https://%s:%d, root %s", n.opts.NodeName, c.Pid(), n.opts.NodeIP, n.opts.KubeletPort, n.layout.kubeletRoot())
	url := "http://127.0.0.1:" + strconv.Itoa(n.opts.HealthzPort) + "/healthz"
	return n.waitChild(ctx, c, "the kubelet's /healthz", func() (bool, string) { return httpOK(ctx, url) })
}

// StopKubelet stops the kubelet, as before a restart on a real machine:
// containerd and the pods' containers keep running. StartKubelet starts a
// new one, which finds them.
func (n *Node) StopKubelet() {
	if n.kubelet != nil {
		n.kubelet.Stop(n.opts.ShutdownGrace)
		n.kubelet = nil
	}
}

// StartKubelet starts the kubelet again after StopKubelet, with the same
// configuration and kubeconfig file (the caller may have rewritten it to
// point at another apiserver). It waits for the kubelet's /healthz, not
// for the apiserver, which may be unable to answer (lab/test/demo59848).
func (n *Node) StartKubelet(ctx context.Context) error {
	if n.containerd == nil {
		return errors.New("realnode: StartKubelet before Start, or after Stop")
	}
	if n.kubelet != nil {
		return errors.New("realnode: StartKubelet while the kubelet runs; StopKubelet first")
	}
	return n.startKubelet(ctx)
}

// waitChild polls cond until it holds, failing early when c exits.
func (n *Node) waitChild(ctx context.Context, c Child, what string, cond func() (bool, string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	err := pollFor(ctx, n.opts.ReadyTimeout, cond)
	select {
	case <-c.Done():
		return fmt.Errorf("realnode: waiting for %s: %w\n%s", what, c.ExitError(), c.TailLog(15))
	default:
	}
	if err != nil {
		return fmt.Errorf("realnode: waiting for %s: %w\n%s", what, err, c.TailLog(15))
	}
	return nil
}

// Stop stops the kubelet, removes every pod sandbox (so the CNI plugins
// release their addresses and devices), stops containerd and undoes every
// host change the journal records. It does not depend on the start's
// context, which Ctrl-C has cancelled by then.
func (n *Node) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if n.kubeProxy != nil {
		n.kubeProxy.Stop(n.opts.ShutdownGrace)
		n.kubeProxy = nil
	}
	if n.kubelet != nil {
		n.kubelet.Stop(n.opts.ShutdownGrace)
		n.kubelet = nil
	}
	if n.containerd != nil {
		select {
		case <-n.containerd.Done():
		default:
			if err := removeSandboxes(ctx, n.layout.containerdSocket()); err != nil {
				errs = append(errs, err)
			}
		}
		n.containerd.Stop(n.opts.ShutdownGrace)
		n.containerd = nil
		// The shims of the removed sandboxes exit on their own, a moment
		// after containerd answered; the undo kills what is left after
		// that moment.
		_ = waitGone(ctx, shimPids(n.layout.containerdSocket()), 5*time.Second)
	}
	if n.state != nil {
		if err := undo(ctx, n.opts.Dir, n.state); err != nil {
			errs = append(errs, err)
		} else {
			n.state = nil
		}
	}
	return errors.Join(errs...)
}

// Layout facts for the caller's messages and ready file.

// ContainerdSocket is the node's containerd socket (for crictl and ctr).
func (n *Node) ContainerdSocket() string { return n.layout.containerdSocket() }

// KubeletRoot is the kubelet's --root-dir.
func (n *Node) KubeletRoot() string { return n.layout.kubeletRoot() }

// Kubelet is the kubelet's process, once started.
func (n *Node) Kubelet() Child { return n.kubelet }

// KubeProxy is kube-proxy's process, once started.
func (n *Node) KubeProxy() Child { return n.kubeProxy }

// Containerd is containerd's process, once started.
func (n *Node) Containerd() Child { return n.containerd }

func (n *Node) logf(format string, args ...any) {
	fmt.Fprintf(n.opts.Out, "real node %s: %s\n", n.opts.NodeName, fmt.Sprintf(format, args...))
}
