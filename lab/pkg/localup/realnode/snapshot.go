package realnode

// HostSnapshot reads, at one moment, everything on the host that a real
// node changes, so that a test (or a person) can check that a run left
// the host as it found it.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// HostSnapshot is the host state a real node touches.
type HostSnapshot struct {
	// Addresses are every device's addresses ("lo 10.200.0.1/32").
	Addresses []string
	// Links are the network devices' names.
	Links []string
	// Sysctls are the values of the sysctls the kubelet, the CNI plugins
	// and kube-proxy set.
	Sysctls map[string]string
	// IPTables and IP6Tables are iptables-save output without comments
	// and counters (NormalizeSave).
	IPTables, IP6Tables string
	// Mounts are the mount points under the roots given.
	Mounts []string
	// Cgroups are the kubelet's cgroup directories that exist.
	Cgroups []string
	// SystemDirs are those of the directories containerd, the CNI
	// plugins and the kubelet create outside their configuration that
	// exist.
	SystemDirs []string
	// Processes are containerd, kubelet, shim and pause processes.
	Processes []string
}

// TakeSnapshot reads the host; roots are the directories whose mounts
// count (a data directory).
func TakeSnapshot(ctx context.Context, roots ...string) (HostSnapshot, error) {
	var s HostSnapshot
	out, err := exec.CommandContext(ctx, "ip", "-o", "addr", "show").Output()
	if err != nil {
		return s, fmt.Errorf("realnode: ip addr: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 {
			s.Addresses = append(s.Addresses, f[1]+" "+f[3])
		}
	}
	sort.Strings(s.Addresses)
	entries, _ := os.ReadDir("/sys/class/net")
	for _, e := range entries {
		s.Links = append(s.Links, e.Name())
	}
	s.Sysctls = map[string]string{}
	for _, sc := range readSysctls(touchedSysctls) {
		s.Sysctls[sc.Key] = sc.Value
	}
	v4, err := iptablesSave(ctx, "iptables")
	if err != nil {
		return s, err
	}
	v6, err := iptablesSave(ctx, "ip6tables")
	if err != nil {
		return s, err
	}
	s.IPTables, s.IP6Tables = NormalizeSave(v4), NormalizeSave(v6)
	if s.Mounts, err = MountsUnder(roots...); err != nil {
		return s, err
	}
	sort.Strings(s.Mounts)
	cgroups, _ := kubeletCgroups()
	for _, cg := range cgroups {
		if _, err := os.Stat(cg); err == nil {
			s.Cgroups = append(s.Cgroups, cg)
		}
	}
	for _, d := range systemDirs {
		if _, err := os.Lstat(d); err == nil {
			s.SystemDirs = append(s.SystemDirs, d)
		}
	}
	s.Processes = nodeProcesses()
	return s, nil
}

// nodeProcesses lists the running processes named like a real node's. A
// zombie does not count: it is gone but for its exit status, which its
// parent (for a shim, whatever reaps orphans) collects in its own time.
func nodeProcesses() []string {
	var out []string
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		data, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(data))
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(c))); err != nil || !processAlive(pid) {
			continue
		}
		switch {
		case name == "containerd", name == "kubelet", name == "pause", strings.HasPrefix(name, "containerd-shim"):
			out = append(out, name+" (pid "+filepath.Base(filepath.Dir(c))+")")
		}
	}
	sort.Strings(out)
	return out
}

// Diff describes how after differs from s, one line per field; nil when
// they are the same.
func (s HostSnapshot) Diff(after HostSnapshot) []string {
	var out []string
	cmp := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			out = append(out, fmt.Sprintf("%s: before %v, after %v", what, a, b))
		}
	}
	cmp("addresses", s.Addresses, after.Addresses)
	cmp("network devices", s.Links, after.Links)
	cmp("sysctls", s.Sysctls, after.Sysctls)
	if s.IPTables != after.IPTables {
		out = append(out, fmt.Sprintf("iptables:\nbefore:\n%safter:\n%s", s.IPTables, after.IPTables))
	}
	if s.IP6Tables != after.IP6Tables {
		out = append(out, fmt.Sprintf("ip6tables:\nbefore:\n%safter:\n%s", s.IP6Tables, after.IP6Tables))
	}
	cmp("mounts", s.Mounts, after.Mounts)
	cmp("kubelet cgroups", s.Cgroups, after.Cgroups)
	cmp("system directories", s.SystemDirs, after.SystemDirs)
	cmp("node processes", s.Processes, after.Processes)
	return out
}
