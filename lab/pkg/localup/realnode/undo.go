package realnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// undo reverses everything s records, in the reverse order of the changes:
// leftover containers and shims, mounts, cgroups, links, iptables,
// sysctls, addresses, directories. It goes on after a failed step and
// returns every error; the state file is removed only when all went well.
func undo(ctx context.Context, dir string, s *State) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(killContainers(ctx, s))
	add(unmountAll(s.MountRoots))
	for i := len(s.Cgroups) - 1; i >= 0; i-- {
		add(removeCgroupWhenEmpty(ctx, s.Cgroups[i]))
	}
	for _, l := range s.Links {
		add(deleteLink(ctx, l))
	}
	for _, cmd := range slices.Sorted(maps.Keys(s.IPTables)) {
		add(undoIPTables(ctx, cmd, s.IPTables[cmd]))
	}
	add(restoreSysctls(s.Sysctls))
	for _, a := range s.Addresses {
		add(deleteAddress(ctx, a))
	}
	add(removeContainerLogLinks(s.PodLogsDir))
	for i := len(s.CreatedDirs) - 1; i >= 0; i-- {
		if err := os.RemoveAll(s.CreatedDirs[i]); err != nil {
			add(fmt.Errorf("realnode: removing %s: %w", s.CreatedDirs[i], err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("realnode: undoing the changes recorded in %s (kept for the next start): %w", statePath(dir), errors.Join(errs...))
	}
	return removeState(dir)
}

// killContainers kills what the node's containerd left running: runc
// containers under its runc root, the shims that served them (their
// command line names containerd's socket), and any process still in a
// cgroup this run created.
func killContainers(ctx context.Context, s *State) error {
	var errs []error
	if s.RuncRoot != "" {
		if _, err := os.Stat(s.RuncRoot); err == nil {
			out, err := exec.CommandContext(ctx, "runc", "--root", s.RuncRoot, "list", "-q").Output()
			if err != nil {
				errs = append(errs, fmt.Errorf("realnode: runc list: %w", exitDetail(err)))
			}
			for _, id := range strings.Fields(string(out)) {
				_ = exec.CommandContext(ctx, "runc", "--root", s.RuncRoot, "kill", id, "KILL").Run()
				if err := run(ctx, "runc", "--root", s.RuncRoot, "delete", "-f", id); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	var pids []int
	if s.ShimAddress != "" {
		pids = append(pids, shimPids(s.ShimAddress)...)
	}
	for _, cg := range s.Cgroups {
		pids = append(pids, cgroupPids(cg)...)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := waitGone(ctx, pids, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// shimPids finds containerd-shim processes whose command line names
// address (containerd passes its socket with -address).
func shimPids(address string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i, a := range args {
			if (a == "-address" || a == "--address") && i+1 < len(args) && args[i+1] == address {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// cgroupPids lists the processes in the cgroup dir and its children.
func cgroupPids(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// waitGone waits until none of pids exists, or timeout.
func waitGone(ctx context.Context, pids []int, timeout time.Duration) error {
	return pollFor(ctx, timeout, func() (bool, string) {
		var alive []string
		for _, pid := range pids {
			if processAlive(pid) {
				alive = append(alive, strconv.Itoa(pid))
			}
		}
		return len(alive) == 0, "still running: " + strings.Join(alive, " ")
	})
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

// removeCgroupWhenEmpty removes a cgroup tree once its processes, just
// killed, have left it.
func removeCgroupWhenEmpty(ctx context.Context, dir string) error {
	var last error
	err := pollFor(ctx, 10*time.Second, func() (bool, string) {
		last = removeCgroup(dir)
		if last == nil {
			return true, ""
		}
		return false, last.Error()
	})
	if err != nil {
		return last
	}
	return nil
}

// removeContainerLogLinks removes the kubelet's symlinks in
// /var/log/containers that point into podLogsDir.
func removeContainerLogLinks(podLogsDir string) error {
	if podLogsDir == "" {
		return nil
	}
	links, _ := filepath.Glob(filepath.Join(containerLogsDir, "*.log"))
	for _, l := range links {
		target, err := os.Readlink(l)
		if err == nil && strings.HasPrefix(target, podLogsDir+"/") {
			_ = os.Remove(l)
		}
	}
	return nil
}

// containerLogsDir is where the kubelet links every container's log (a
// path it does not let one configure).
const containerLogsDir = "/var/log/containers"

// pollFor checks cond every 100 ms until it holds (nil), ctx is done or
// timeout passes (an error with cond's last answer).
func pollFor(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("realnode: %w (%s)", ctx.Err(), why)
		case <-deadline.C:
			return fmt.Errorf("realnode: not done after %s: %s", timeout, why)
		case <-tick.C:
		}
	}
}
