package upstreame2e

// The suite on kind: a fresh kind cluster (hack/kind-up.sh, offline
// images) per implementation instead of local-up, with the e2e test
// images loaded into its nodes.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kind says how to bring up a kind cluster for a run.
type Kind struct {
	// Root is the repository's root, which holds hack/kind-up.sh.
	Root string
	// Name is the kind cluster's name.
	Name string
	// Binary is the kind program (make build-kind-bins' _output/bin/kind).
	Binary string
	// Images are docker-save tarballs loaded into every node before the
	// tests start (the e2e test images: no registry is reachable).
	Images []string
	// UpTimeout bounds hack/kind-up.sh (it builds our apiserver's image
	// before it creates the cluster).
	UpTimeout time.Duration
}

// sharedKindArgs are the kube-apiserver flags every kind run gets: etcd
// compacted every minute, as local-up's runs have it (clusterArgs).
var sharedKindArgs = []string{"--etcd-compaction-interval=1m"}

// kindUpArgs are hack/kind-up.sh's arguments for impl: the offline
// images, one control plane and one worker, the cluster's files under
// out, and impl's kube-apiserver flags, --feature-gates as kind-up's own
// flag (empty when impl sets none, so that kind-up's default gates do not
// apply) and every other flag as --apiserver-arg.
func kindUpArgs(name, out string, impl Implementation) ([]string, error) {
	args := []string{"--offline", "--name=" + name, "--out=" + out}
	gates := ""
	for _, a := range append(append([]string(nil), sharedKindArgs...), impl.Args...) {
		flag, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok || flag == "" {
			return nil, fmt.Errorf("%s: kube-apiserver flag %q is not --name=value", impl.Name, a)
		}
		if flag == "feature-gates" {
			if gates != "" {
				gates += ","
			}
			gates += value
			continue
		}
		args = append(args, "--apiserver-arg="+flag+"="+value)
	}
	return append(args, "--feature-gates="+gates), nil
}

// start brings up a fresh kind cluster for impl, its files and logs
// under dir, and returns its kubeconfig and how to delete it. A cluster
// of the same name left by an earlier run is deleted first.
func (k Kind) start(ctx context.Context, impl Implementation, dir string) (kubeconfig string, stop func() error, err error) {
	args, err := kindUpArgs(k.Name, filepath.Join(dir, "kind"), impl)
	if err != nil {
		return "", nil, err
	}
	stop = func() error { return k.run(context.Background(), "delete", "cluster", "--name="+k.Name) }
	if err := stop(); err != nil {
		return "", nil, fmt.Errorf("deleting an earlier kind cluster %s: %w", k.Name, err)
	}
	timeout := k.UpTimeout
	if timeout <= 0 {
		timeout = 20 * time.Minute
	}
	upCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logPath := filepath.Join(dir, "kind-up.log")
	log, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	defer log.Close()
	up := exec.CommandContext(upCtx, filepath.Join(k.Root, "hack", "kind-up.sh"), args...)
	up.Dir = k.Root
	up.Env = append(os.Environ(), "KIND="+k.Binary)
	up.Stdout, up.Stderr = log, log
	if err := up.Run(); err != nil {
		_ = stop()
		return "", nil, fmt.Errorf("%s: hack/kind-up.sh %s: %v (see %s)", impl.Name, strings.Join(args, " "), err, logPath)
	}
	fail := func(err error) (string, func() error, error) {
		_ = stop()
		return "", nil, fmt.Errorf("%s: %w", impl.Name, err)
	}
	var cfg bytes.Buffer
	get := exec.CommandContext(ctx, k.Binary, "get", "kubeconfig", "--name="+k.Name)
	get.Stdout = &cfg
	if out, err := runQuiet(get); err != nil {
		return fail(fmt.Errorf("kind get kubeconfig: %v: %s", err, out))
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cfg.Bytes(), 0o600); err != nil {
		return fail(err)
	}
	for _, img := range k.Images {
		if err := k.run(ctx, "load", "image-archive", img, "--name="+k.Name); err != nil {
			return fail(err)
		}
	}
	return kubeconfig, stop, nil
}

// run runs kind with args; its output is in the error.
func (k Kind) run(ctx context.Context, args ...string) error {
	if out, err := runQuiet(exec.CommandContext(ctx, k.Binary, args...)); err != nil {
		return fmt.Errorf("kind %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// runQuiet runs cmd and returns the tail of its stderr (and of its
// stdout, unless the caller took it).
func runQuiet(cmd *exec.Cmd) (string, error) {
	var out bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	cmd.Stderr = &out
	err := cmd.Run()
	return tail(out.Bytes(), 2000), err
}
