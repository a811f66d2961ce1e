package upstreame2e

// The suite on kind: a fresh kind cluster (hack/kind-up.sh, offline
// images) per implementation instead of local-up, with the e2e test
// images loaded into its nodes.

import (
	"context"
	"fmt"
	"strings"

	"github.com/freshcache/freshcache/lab/pkg/kindcluster"
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
}

// sharedKindArgs are the kube-apiserver flags every kind run gets: etcd
// compacted every minute, as local-up's runs have it (clusterArgs).
var sharedKindArgs = []string{"--etcd-compaction-interval=1m"}

// kindUpArgs are hack/kind-up.sh's arguments for impl's kube-apiserver
// flags: --feature-gates as kind-up's own flag (empty when impl sets
// none, so that kind-up's default gates do not apply) and every other
// flag as --apiserver-arg.
func kindUpArgs(impl Implementation) ([]string, error) {
	var args []string
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

// start brings up a fresh 1+1 kind cluster for impl, its files and logs
// under dir, loads the images, and returns its kubeconfig and how to
// delete it.
func (k Kind) start(ctx context.Context, impl Implementation, dir string) (kubeconfig string, stop func() error, err error) {
	args, err := kindUpArgs(impl)
	if err != nil {
		return "", nil, err
	}
	c, err := kindcluster.Up(ctx, kindcluster.Options{Root: k.Root, Name: k.Name, Binary: k.Binary, Dir: dir, Args: args})
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", impl.Name, err)
	}
	for _, img := range k.Images {
		if err := c.LoadImageArchive(ctx, img); err != nil {
			_ = c.Delete()
			return "", nil, fmt.Errorf("%s: %w", impl.Name, err)
		}
	}
	return c.Kubeconfig, c.Delete, nil
}
