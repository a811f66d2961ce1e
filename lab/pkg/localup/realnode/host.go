package realnode

// The host changes a real node makes, one small function each: sysctls,
// addresses, links, mounts and cgroups. The undo (undo.go) calls them with
// what the State recorded; none of them fails when there is nothing left
// to undo.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// touchedSysctls are the sysctls that the kubelet (setupKernelTunables:
// the panic and overcommit ones and the key quotas), the bridge CNI plugin
// (forwarding) and kube-proxy (route_localnet, bridge-nf-call, conntrack)
// set. Their values before a run are recorded and put back.
var touchedSysctls = []string{
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"net/ipv4/ip_forward",
	"net/ipv4/conf/all/forwarding",
	"net/ipv4/conf/default/forwarding",
	"net/ipv6/conf/all/forwarding",
	"net/ipv6/conf/default/forwarding",
	"net/ipv4/conf/all/route_localnet",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"net/netfilter/nf_conntrack_max",
	"net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"net/netfilter/nf_conntrack_tcp_be_liberal",
}

// procSys is where sysctls are read and written; tests point it elsewhere.
var procSys = "/proc/sys"

// readSysctls returns the current values of those of keys that exist.
func readSysctls(keys []string) []Sysctl {
	var out []Sysctl
	for _, k := range keys {
		data, err := os.ReadFile(filepath.Join(procSys, k))
		if err != nil {
			continue
		}
		out = append(out, Sysctl{Key: k, Value: strings.TrimSpace(string(data))})
	}
	return out
}

// restoreSysctls writes back every recorded value that differs now.
func restoreSysctls(saved []Sysctl) error {
	var errs []error
	for _, s := range saved {
		path := filepath.Join(procSys, s.Key)
		data, err := os.ReadFile(path)
		if err != nil {
			continue // gone with its module or device
		}
		if strings.TrimSpace(string(data)) == s.Value {
			continue
		}
		if err := os.WriteFile(path, []byte(s.Value+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("realnode: restoring sysctl %s=%s: %w", strings.ReplaceAll(s.Key, "/", "."), s.Value, err))
		}
	}
	return errors.Join(errs...)
}

// run runs a command and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("realnode: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hasAddress reports whether any device has ip (without prefix length).
func hasAddress(ctx context.Context, ip string) (string, bool) {
	out, err := exec.CommandContext(ctx, "ip", "-o", "addr", "show").Output()
	if err != nil {
		return "", false
	}
	return findAddress(string(out), ip)
}

// findAddress finds ip in `ip -o addr show` output and names its device.
func findAddress(out, ip string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "inet" || f[i] == "inet6") && strings.SplitN(f[i+1], "/", 2)[0] == ip && len(f) > 1 {
				return f[1], true
			}
		}
	}
	return "", false
}

func addAddress(ctx context.Context, a Address) error {
	return run(ctx, "ip", "addr", "add", a.CIDR, "dev", a.Dev)
}

func deleteAddress(ctx context.Context, a Address) error {
	ip := strings.SplitN(a.CIDR, "/", 2)[0]
	if dev, ok := hasAddress(ctx, ip); !ok || dev != a.Dev {
		return nil
	}
	return run(ctx, "ip", "addr", "del", a.CIDR, "dev", a.Dev)
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

func deleteLink(ctx context.Context, name string) error {
	if !linkExists(name) {
		return nil
	}
	return run(ctx, "ip", "link", "del", name)
}

// mountsUnder lists the mount points at or under any of roots from a
// /proc/self/mountinfo, deepest first (the order to unmount them in).
func mountsUnder(mountinfo io.Reader, roots []string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		for _, r := range roots {
			r = filepath.Clean(r)
			if mp == r || strings.HasPrefix(mp, r+"/") {
				out = append(out, mp)
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// Deepest first; a path mounted twice is unmounted twice.
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountsUnder lists the current mount points at or under roots, deepest
// first.
func MountsUnder(roots ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mountsUnder(f, roots)
}

// unmountAll unmounts everything at or under roots, deepest first; a
// mount still busy is detached (MNT_DETACH), so it goes once unused.
func unmountAll(roots []string) error {
	var errs []error
	for range 3 { // a mount over a mount shows again once the top one goes
		mps, err := MountsUnder(roots...)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			if err := syscall.Unmount(mp, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				if err2 := syscall.Unmount(mp, syscall.MNT_DETACH); err2 != nil && !errors.Is(err2, syscall.EINVAL) {
					errs = append(errs, fmt.Errorf("realnode: unmounting %s: %w", mp, err2))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// cgroupV1Root is where the cgroup v1 hierarchies are mounted.
const cgroupV1Root = "/sys/fs/cgroup"

// cgroupHierarchies lists the directories of the mounted hierarchies: the
// v1 controllers', and in hybrid mode the v2 one under "unified", where
// runc makes the containers' cgroups too.
func cgroupHierarchies() []string {
	entries, err := os.ReadDir(cgroupV1Root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		out = append(out, filepath.Join(cgroupV1Root, e.Name()))
	}
	return out
}

// removeCgroup removes dir and the cgroups under it, children first. A
// cgroup that still has processes cannot go: that error is returned.
func removeCgroup(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("realnode: removing cgroup %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}
