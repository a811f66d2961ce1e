package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binDir holds kube-apiserver, local-up, kubectl and the upstream components
// local-up runs: kube-controller-manager, kube-scheduler and kubemark.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	binDir = os.Getenv("FRESHCACHE_BIN_DIR")
	if binDir == "" {
		tmp, err := os.MkdirTemp("", "freshcache-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		root, err := repoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// The product from the root module, the rest from the lab's.
		for _, b := range []struct {
			dir  string
			args []string
		}{
			{root, []string{"build", "-o", tmp + "/", "./cmd/kube-apiserver"}},
			{filepath.Join(root, "lab"), []string{"build", "-o", tmp + "/", "./cmd/local-up",
				"k8s.io/kubernetes/cmd/kubectl", "k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubemark"}},
		} {
			cmd := exec.Command("go", b.args...)
			cmd.Dir = b.dir
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "building binaries for e2e:", err)
				return 1
			}
		}
		binDir = tmp
	}
	for _, name := range []string{"kube-apiserver", "local-up", "kubectl", "kube-controller-manager", "kube-scheduler", "kubemark"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			fmt.Fprintf(os.Stderr, "e2e needs %s in %s: %v\n", name, binDir, err)
			return 1
		}
	}
	return m.Run()
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "cmd", "kube-apiserver")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no repository root above %s", dir)
		}
		dir = parent
	}
}

func bin(name string) string { return filepath.Join(binDir, name) }
