// Command kind-config writes the files hack/kind-up.sh needs (Dockerfiles,
// systemd unit, kubeadm patch, kind config) into --out. See lab/pkg/kindconfig
// and docs/kind.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/freshcache/freshcache/lab/pkg/kindconfig"
)

type argList map[string]string

func (a argList) String() string { return "" }
func (a argList) Set(s string) error {
	name, value, ok := strings.Cut(strings.TrimPrefix(s, "--"), "=")
	if !ok {
		return fmt.Errorf("want name=value, got %q", s)
	}
	a[name] = value
	return nil
}

func parseGates(s string) (map[string]bool, error) {
	gates := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("feature gate %q: want Name=true|false", kv)
		}
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, fmt.Errorf("feature gate %q: %w", kv, err)
		}
		gates[name] = b
	}
	return gates, nil
}

func main() {
	o := kindconfig.Defaults()
	out := flag.String("out", "_output/kind", "directory to write the files into")
	flag.StringVar(&o.ClusterName, "name", o.ClusterName, "kind cluster name")
	flag.IntVar(&o.ControlPlanes, "control-planes", o.ControlPlanes, "control-plane nodes (1, or 3 for HA)")
	flag.IntVar(&o.Workers, "workers", o.Workers, "worker nodes")
	flag.StringVar(&o.APIServerBase, "apiserver-base", o.APIServerBase, "upstream kube-apiserver image to layer our binary on")
	flag.StringVar(&o.NodeBase, "node-base", o.NodeBase, "kind node image to build FROM")
	flag.StringVar(&o.APIServerImage, "apiserver-image", o.APIServerImage, "tag of the kube-apiserver image to build")
	flag.StringVar(&o.NodeImage, "node-image", o.NodeImage, "tag of the node image to build")
	flag.BoolVar(&o.DisableDefaultCNI, "disable-default-cni", o.DisableDefaultCNI, "turn kind's kindnetd off (the offline node image brings its own CNI)")
	gates := flag.String("feature-gates", o.FeatureGatesString(), "kube-apiserver --feature-gates (Name=bool,...)")
	args := argList{}
	flag.Var(args, "apiserver-arg", "extra kube-apiserver flag name=value (repeatable), e.g. consistent-read-timeout-action=reject")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "kind-config: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	var err error
	if o.FeatureGates, err = parseGates(*gates); err != nil {
		fmt.Fprintln(os.Stderr, "kind-config:", err)
		os.Exit(2)
	}
	o.APIServerArgs = args
	written, err := kindconfig.Write(*out, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kind-config:", err)
		os.Exit(1)
	}
	for _, p := range written {
		fmt.Println(p)
	}
}
