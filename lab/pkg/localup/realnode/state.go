package realnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// stateVersion changes when State changes shape; a file of another version
// is refused instead of being half undone.
const stateVersion = 1

// ErrStateVersion is wrapped when the state file is of another version.
var ErrStateVersion = errors.New("realnode: state file of another version")

// State is the undo journal: what a run changed, or is about to change, on
// the host. Every entry is written (saveState) before the change it
// records is made, so a crash at any point leaves a file that names at
// least everything that was changed; undoing an entry whose change never
// happened does nothing. It lives in <Dir>/state.json and is removed once
// everything in it is undone.
type State struct {
	Version int `json:"version"`
	// PID is the local-up that made the changes: while it runs, nobody
	// else undoes them.
	PID int `json:"pid"`
	// Addresses were added to devices.
	Addresses []Address `json:"addresses,omitempty"`
	// Links are network devices made for the node (the CNI bridge).
	Links []string `json:"links,omitempty"`
	// Sysctls hold the values before the run, of every sysctl the
	// kubelet, the CNI plugins or kube-proxy may set.
	Sysctls []Sysctl `json:"sysctls,omitempty"`
	// IPTables maps "iptables" and "ip6tables" to their save output before
	// the run ("" for no table at all).
	IPTables map[string]string `json:"iptables,omitempty"`
	// NFTablesBefore lists the nf_tables tables ("ip filter") that existed
	// before, when iptables uses the nf_tables backend: the tables the
	// iptables rules made are deleted again.
	NFTablesBefore []string `json:"nftablesBefore,omitempty"`
	// CreatedDirs did not exist before the run, outside Dir; they are
	// removed.
	CreatedDirs []string `json:"createdDirs,omitempty"`
	// Cgroups are cgroup directories (absolute) that did not exist before:
	// removed, children first, once their processes are gone.
	Cgroups []string `json:"cgroups,omitempty"`
	// MountRoots: every mount at or under these is unmounted.
	MountRoots []string `json:"mountRoots,omitempty"`
	// RuncRoot is the runc state directory of the node's containers: any
	// container left there is killed and deleted.
	RuncRoot string `json:"runcRoot,omitempty"`
	// ShimAddress is containerd's socket: shims started for it (their
	// command line names it) are killed.
	ShimAddress string `json:"shimAddress,omitempty"`
	// PodLogsDir: symlinks to it in /var/log/containers are removed.
	PodLogsDir string `json:"podLogsDir,omitempty"`
}

// Address is an IP address in CIDR form on a device.
type Address struct {
	Dev  string `json:"dev"`
	CIDR string `json:"cidr"`
}

// Sysctl is a sysctl by its /proc/sys path ("net/ipv4/ip_forward") and
// value.
type Sysctl struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// statePath is where the journal of the node under dir lives.
func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// saveState writes s atomically: a crash leaves the old file or the new
// one, never half of one.
func saveState(dir string, s *State) error {
	s.Version = stateVersion
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := statePath(dir) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(dir))
}

// loadState reads the journal; (nil, nil) when there is none.
func loadState(dir string) (*State, error) {
	data, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("realnode: %s: %w", statePath(dir), err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("%w: %s has version %d, this local-up writes %d; undo its changes by hand and remove it",
			ErrStateVersion, statePath(dir), s.Version, stateVersion)
	}
	return &s, nil
}

func removeState(dir string) error {
	err := os.Remove(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
