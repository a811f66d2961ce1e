// Command local-up runs a local Kubernetes cluster for trying freshcache: an
// embedded etcd (one member, or three on loopback) in this process, one or
// more kube-apiserver child processes against it, kube-controller-manager
// and kube-scheduler, and kubemark hollow nodes (the real kubelet on a fake
// container runtime). Each component has its own credentials. It writes
// them and a kubeconfig per apiserver under --data-dir, prints how to use
// them, writes <data-dir>/ready.json once everything is up, and on Ctrl-C
// stops everything. Flags it does not know go to kube-apiserver.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/lab/pkg/localup"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "local-up:", err)
		}
		os.Exit(1)
	}
}

func run(args []string) error {
	opts := localup.NewOptions()
	fs := pflag.NewFlagSet("local-up", pflag.ContinueOnError)
	opts.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: local-up [flags] [kube-apiserver flags]\n\n"+
			"Runs an embedded etcd, kube-apiserver(s), kube-controller-manager, kube-scheduler\n"+
			"and kubemark hollow nodes on loopback (--nodes=0 --controllers=false: etcd and\n"+
			"kube-apiserver only). Flags not listed below are passed to kube-apiserver, e.g.\n"+
			"--watch-cache-implementation=upstream or --feature-gates=FreshResourceVersionZero=false.\n\n")
		fs.PrintDefaults()
	}
	ours, theirs := localup.SplitArgs(fs, args)
	if err := fs.Parse(ours); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; kube-apiserver flags start with --", fs.Arg(0))
	}
	opts.PassThrough = theirs

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cluster, err := localup.Start(ctx, opts, os.Stdout)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping ...")
		cluster.Stop()
		fmt.Println("Stopped. Data is kept in", opts.DataDir)
	}()

	fmt.Println()
	fmt.Println("Local control plane is ready. To use it:")
	try := "kubectl get ns"
	if len(cluster.Nodes) > 0 {
		try = "kubectl get nodes"
	}
	for _, kc := range cluster.Kubeconfigs {
		abs, _ := filepath.Abs(kc)
		fmt.Printf("  export KUBECONFIG=%s; %s\n", abs, try)
	}
	fmt.Println("Press Ctrl-C to stop.")
	return cluster.Wait(ctx)
}
