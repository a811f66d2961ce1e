package realnode

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/freshcache/freshcache/lab/internal/errtest"
)

func TestStateRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		s    State
	}{
		{"empty", State{PID: 1}},
		{"full", State{
			PID:         42,
			Addresses:   []Address{{Dev: "lo", CIDR: "10.200.0.1/32"}},
			Links:       []string{"freshcache0"},
			Sysctls:     []Sysctl{{Key: "net/ipv4/ip_forward", Value: "0"}, {Key: "kernel/panic", Value: "1"}},
			IPTables:    map[string]string{"iptables": saveBefore, "ip6tables": ""},
			CreatedDirs: []string{"/run/containerd"},
			Cgroups:     []string{"/sys/fs/cgroup/memory/kubepods"},
			MountRoots:  []string{"/data/real-0"},
			RuncRoot:    "/data/real-0/containerd/runc",
			ShimAddress: "/data/real-0/containerd/containerd.sock",
			PodLogsDir:  "/data/real-0/kubelet/pod-logs",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := tt.s
			if err := saveState(dir, &s); err != nil {
				t.Fatal(err)
			}
			got, err := loadState(dir)
			if err != nil {
				t.Fatal(err)
			}
			s.Version = stateVersion
			if !reflect.DeepEqual(got, &s) {
				t.Errorf("loaded %+v\nsaved  %+v", got, &s)
			}
			if _, err := os.Stat(statePath(dir) + ".tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("temporary file left behind: %v", err)
			}
			if err := removeState(dir); err != nil {
				t.Fatal(err)
			}
			if got, err := loadState(dir); got != nil || err != nil {
				t.Errorf("after removeState: %v, %v", got, err)
			}
		})
	}
}

func TestLoadStateRefuses(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"other version", `{"version": 99, "pid": 5}`, "version 99"},
		{"not JSON", `{"version": 1,`, "state.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := loadState(dir)
			errtest.Want(t, "loadState", err, tt.want)
		})
	}
}

func TestRestoreSysctls(t *testing.T) {
	old := procSys
	procSys = t.TempDir()
	t.Cleanup(func() { procSys = old })
	write := func(k, v string) {
		p := filepath.Join(procSys, k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kernel/panic", "1")
	write("vm/overcommit_memory", "0")
	saved := readSysctls([]string{"kernel/panic", "vm/overcommit_memory", "net/bridge/bridge-nf-call-iptables"})
	if len(saved) != 2 {
		t.Fatalf("readSysctls = %v, want the two that exist", saved)
	}
	write("kernel/panic", "10")
	write("vm/overcommit_memory", "1")
	if err := restoreSysctls(saved); err != nil {
		t.Fatal(err)
	}
	if got := readSysctls([]string{"kernel/panic", "vm/overcommit_memory"}); !reflect.DeepEqual(got, saved) {
		t.Errorf("after restore %v, want %v", got, saved)
	}
}
