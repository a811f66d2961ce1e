package kindcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Options say how to bring a cluster up.
type Options struct {
	// Root is the repository's root, which holds hack/kind-up.sh.
	Root string
	// Name is the kind cluster's name.
	Name string
	// Binary is the kind program (make build-kind-bins' _output/bin/kind).
	Binary string
	// Dir receives kind-up's generated files, its log and the kubeconfig.
	Dir string
	// Args are more of hack/kind-up.sh's arguments (--ha, --feature-gates=,
	// --apiserver-arg=...); Up adds --offline, --name and --out.
	Args []string
	// Timeout bounds hack/kind-up.sh (it builds our apiserver's image
	// before it creates the cluster); zero means 20 minutes.
	Timeout time.Duration
}

// Cluster is a running kind cluster.
type Cluster struct {
	Name, Binary string
	// Kubeconfig reaches the cluster through kind's published port (the
	// load balancer with several control planes).
	Kubeconfig string
	// Env is added to kind's environment: what hack/kind-up.sh gave kind
	// (its docker shim, on an engine that cannot run --privileged), read
	// from its kind.env.
	Env []string
}

// UpArgs are hack/kind-up.sh's arguments for o.
func (o Options) UpArgs() []string {
	return append([]string{"--offline", "--name=" + o.Name, "--out=" + filepath.Join(o.Dir, "kind")}, o.Args...)
}

// Up deletes a cluster of the same name left by an earlier run, brings a
// fresh one up with hack/kind-up.sh (its output in Dir/kind-up.log) and
// writes its kubeconfig into Dir. On an error no cluster is left.
func Up(ctx context.Context, o Options) (*Cluster, error) {
	c := &Cluster{Name: o.Name, Binary: o.Binary}
	if err := c.Delete(); err != nil {
		return nil, fmt.Errorf("deleting an earlier kind cluster %s: %w", o.Name, err)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Minute
	}
	upCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logPath := filepath.Join(o.Dir, "kind-up.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	args := o.UpArgs()
	up := exec.CommandContext(upCtx, filepath.Join(o.Root, "hack", "kind-up.sh"), args...)
	up.Dir = o.Root
	up.Env = append(os.Environ(), "KIND="+o.Binary)
	up.Stdout, up.Stderr = log, log
	if err := up.Run(); err != nil {
		_ = c.Delete()
		return nil, fmt.Errorf("hack/kind-up.sh %s: %v (see %s)", strings.Join(args, " "), err, logPath)
	}
	if c.Env, err = ReadEnv(filepath.Join(o.Dir, "kind", "kind.env")); err != nil {
		_ = c.Delete()
		return nil, err
	}
	cfg, err := c.kind(ctx, "get", "kubeconfig", "--name="+o.Name)
	if err == nil {
		c.Kubeconfig = filepath.Join(o.Dir, "kubeconfig")
		err = os.WriteFile(c.Kubeconfig, []byte(cfg), 0o600)
	}
	if err != nil {
		_ = c.Delete()
		return nil, err
	}
	return c, nil
}

// Delete deletes the cluster (nothing when there is none).
func (c *Cluster) Delete() error {
	_, err := c.kind(context.Background(), "delete", "cluster", "--name="+c.Name)
	return err
}

// LoadImageArchive loads a docker-save tarball into every node.
func (c *Cluster) LoadImageArchive(ctx context.Context, path string) error {
	_, err := c.kind(ctx, "load", "image-archive", path, "--name="+c.Name)
	return err
}

// ControlPlane is the container name of control plane i (0-based), as
// kind names them.
func (c *Cluster) ControlPlane(i int) string {
	if i == 0 {
		return c.Name + "-control-plane"
	}
	return fmt.Sprintf("%s-control-plane%d", c.Name, i+1)
}

// Exec runs a command inside a node's container and returns its output.
func (c *Cluster) Exec(ctx context.Context, node string, cmd ...string) (string, error) {
	return run(exec.CommandContext(ctx, "docker", append([]string{"exec", node}, cmd...)...))
}

// NodeIP is a node's address on kind's Docker network.
func (c *Cluster) NodeIP(ctx context.Context, node string) (string, error) {
	out, err := run(exec.CommandContext(ctx, "docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", node))
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		return "", fmt.Errorf("kindcluster: node %s has no address", node)
	}
	return f[0], nil
}

// kind runs kind with args, in c.Env, and returns its standard output.
func (c *Cluster) kind(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Binary, args...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	return run(cmd)
}

// ReadEnv reads hack/kind-up.sh's kind.env: one NAME=value a line, blank
// lines skipped. A missing file is an empty environment (a kind-up from
// before the file, or a dry run).
func ReadEnv(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var env []string
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		if name, _, ok := strings.Cut(line, "="); !ok || name == "" {
			return nil, fmt.Errorf("%s:%d: %q is not NAME=value", path, i+1, line)
		}
		env = append(env, line)
	}
	return env, nil
}

// run runs cmd and returns its standard output; the error holds the
// tail of its standard error.
func run(cmd *exec.Cmd) (string, error) {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b := errOut.Bytes()
		if len(b) > 2000 {
			b = b[len(b)-2000:]
		}
		return out.String(), fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, b)
	}
	return out.String(), nil
}
