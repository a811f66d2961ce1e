package realnode

// Checks that run before anything on the host changes: root, the
// packages (installed when missing and allowed), cgroups, ports, the node
// IP, the pod network and the bridge name.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Errors of the checks; each message names the cause and what to do.
var (
	ErrNotRoot   = errors.New("realnode: real nodes need root")
	ErrPackages  = errors.New("realnode: missing packages")
	ErrCgroups   = errors.New("realnode: cgroups do not allow a kubelet here")
	ErrInUse     = errors.New("realnode: already in use")
	ErrBusybox   = errors.New("realnode: /bin/busybox is not the static one")
	ErrOtherNode = errors.New("realnode: another local-up runs a real node on this data directory")
	ErrKernel    = errors.New("realnode: the kernel lacks a feature")
)

// CheckRoot fails unless this process is root, naming the command to run
// instead (command is how this one was started, os.Args).
func CheckRoot(command []string) error {
	if os.Geteuid() == 0 {
		return nil
	}
	cmd := "sudo " + shellJoin(command)
	return fmt.Errorf("%w: it runs containerd and a kubelet, and adds an address, a bridge, iptables rules and sysctls (all undone at exit); run: %s", ErrNotRoot, cmd)
}

// shellJoin quotes args for a POSIX shell.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=/.,:@+%") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// debPackage is a Debian package and the files the node needs from it.
type debPackage struct {
	name  string
	files []string
}

func (o *Options) packages() []debPackage {
	pkgs := []debPackage{
		{"containerd", []string{"/usr/bin/containerd", "/usr/bin/containerd-shim-runc-v2", "/usr/bin/ctr"}},
		{"runc", []string{"/usr/sbin/runc"}},
		{"containernetworking-plugins", []string{filepath.Join(o.CNIBinDir, "bridge"), filepath.Join(o.CNIBinDir, "host-local"), filepath.Join(o.CNIBinDir, "loopback"), filepath.Join(o.CNIBinDir, "firewall")}},
		{"busybox-static", []string{o.BusyboxBinary}},
		{"iptables", []string{"/usr/sbin/iptables", "/usr/sbin/iptables-save", "/usr/sbin/iptables-restore"}},
	}
	if o.AgnhostBinary != "" {
		pkgs = append(pkgs, agnhostPackages()...)
	}
	return pkgs
}

// missingPackages lists the packages with a file missing.
func missingPackages(pkgs []debPackage) []string {
	var missing []string
	for _, p := range pkgs {
		for _, f := range p.files {
			if _, err := os.Stat(f); err != nil {
				missing = append(missing, p.name)
				break
			}
		}
	}
	return missing
}

// ensurePackages installs what is missing with apt-get (after an
// apt-get update when the first try fails: a fresh machine has no package
// lists).
func (n *Node) ensurePackages(ctx context.Context) error {
	// Debian's busybox (dynamic) and busybox-static both own
	// /bin/busybox; installing one removes the other, which is not ours to
	// do.
	if _, err := os.Stat(n.opts.BusyboxBinary); err == nil {
		if _, err := staticBinary(n.opts.BusyboxBinary); errors.Is(err, ErrNotStatic) {
			return fmt.Errorf("%w: %s is dynamically linked (Debian's busybox package); pods need the static one: run apt-get install busybox-static (it replaces busybox)", ErrBusybox, n.opts.BusyboxBinary)
		}
	}
	return installPackages(ctx, n.opts.packages(), n.opts.Install, n.logf)
}

// installPackages installs, when install allows, the packages of pkgs that
// have a file missing, and checks that the files are there afterwards.
func installPackages(ctx context.Context, pkgs []debPackage, install bool, logf func(string, ...any)) error {
	missing := missingPackages(pkgs)
	if len(missing) == 0 {
		return nil
	}
	command := "apt-get install -y " + strings.Join(missing, " ")
	if !install {
		return fmt.Errorf("%w: %s; run: %s", ErrPackages, strings.Join(missing, ", "), command)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%w: %s, and there is no apt-get here to install them; install them with this system's package manager", ErrPackages, strings.Join(missing, ", "))
	}
	logf("installing %s (apt-get)", strings.Join(missing, ", "))
	args := append([]string{"install", "-y", "--no-install-recommends"}, missing...)
	if err := aptGet(ctx, args...); err != nil {
		logf("apt-get install failed; running apt-get update and trying again")
		if uerr := aptGet(ctx, "update"); uerr != nil {
			return fmt.Errorf("%w: %s: apt-get update failed: %w", ErrPackages, strings.Join(missing, ", "), uerr)
		}
		if err := aptGet(ctx, args...); err != nil {
			return fmt.Errorf("%w: %s could not be installed: %w", ErrPackages, strings.Join(missing, ", "), err)
		}
	}
	if still := missingPackages(pkgs); len(still) > 0 {
		return fmt.Errorf("%w: %s installed, but files are still missing", ErrPackages, strings.Join(still, ", "))
	}
	return nil
}

func aptGet(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 6 {
			lines = lines[len(lines)-6:]
		}
		return fmt.Errorf("apt-get %s: %w:\n%s", strings.Join(args, " "), err, strings.Join(lines, "\n"))
	}
	return nil
}

// kubeletCgroups are the cgroups the kubelet creates (cgroupsPerQOS with
// the cgroupfs driver): "kubepods" at the root of every hierarchy.
func kubeletCgroups() ([]string, error) {
	if _, err := os.Stat(filepath.Join(cgroupV1Root, "cgroup.controllers")); err == nil {
		return []string{filepath.Join(cgroupV1Root, "kubepods")}, nil // cgroup v2
	}
	hs := cgroupHierarchies()
	need := []string{"cpu", "cpuacct", "cpuset", "memory", "pids"}
	var missing []string
	for _, s := range need {
		if _, err := os.Stat(filepath.Join(cgroupV1Root, s)); err != nil {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: cgroup v1 controllers %s are not mounted under %s", ErrCgroups, strings.Join(missing, ", "), cgroupV1Root)
	}
	var out []string
	for _, h := range hs {
		out = append(out, filepath.Join(h, "kubepods"))
	}
	return out, nil
}

// checkCgroups fails when a kubelet's cgroups exist already (another
// kubelet runs here) or cgroups cannot be made.
func checkCgroups(cgroups []string) error {
	for _, cg := range cgroups {
		if _, err := os.Stat(cg); err == nil {
			return fmt.Errorf("%w: %s exists: another kubelet runs on this machine (or one left it behind; remove it with rmdir once its processes are gone)", ErrCgroups, cg)
		}
		probe := filepath.Join(filepath.Dir(cg), "freshcache-probe-"+strconv.Itoa(os.Getpid()))
		if err := os.Mkdir(probe, 0o755); err != nil {
			return fmt.Errorf("%w: cannot create a cgroup in %s: %w", ErrCgroups, filepath.Dir(cg), err)
		}
		_ = syscall.Rmdir(probe)
	}
	return nil
}

// checkNetwork fails when the node IP is on a device, the bridge exists,
// the pod CIDR overlaps an address of this host or one of the ports is
// taken.
func (o *Options) checkNetwork(ctx context.Context) error {
	var errs []error
	if dev, ok := hasAddress(ctx, o.NodeIP); ok {
		errs = append(errs, fmt.Errorf("%w: node IP %s is already on %s (another real node?)", ErrInUse, o.NodeIP, dev))
	}
	if linkExists(o.Bridge) {
		errs = append(errs, fmt.Errorf("%w: network device %s exists (another real node?)", ErrInUse, o.Bridge))
	}
	if _, err := os.Stat(filepath.Join(procSys, "net/bridge/bridge-nf-call-iptables")); o.KubeProxyBinary != "" && err != nil {
		errs = append(errs, fmt.Errorf("%w: kube-proxy needs the br_netfilter module (Services between pods on one bridge): run modprobe br_netfilter", ErrKernel))
	}
	_, pods, _ := net.ParseCIDR(o.PodCIDR)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && (pods.Contains(ipn.IP) || ipn.Contains(pods.IP)) && !ipn.IP.IsLoopback() {
				errs = append(errs, fmt.Errorf("%w: pod network %s overlaps address %s of this host", ErrInUse, o.PodCIDR, ipn))
			}
		}
	}
	for _, p := range []struct {
		what, host string
		port       int
	}{{"kubelet port", "0.0.0.0", o.KubeletPort}, {"kubelet healthz port", "127.0.0.1", o.HealthzPort},
		{"kube-proxy healthz port", "127.0.0.1", o.ProxyHealthzPort}, {"kube-proxy metrics port", "127.0.0.1", o.ProxyMetricsPort}} {
		if o.KubeProxyBinary == "" && p.port != o.KubeletPort && p.port != o.HealthzPort {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(p.host, strconv.Itoa(p.port)))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s %d: %w", ErrInUse, p.what, p.port, err))
			continue
		}
		_ = l.Close()
	}
	return errors.Join(errs...)
}
