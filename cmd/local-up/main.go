// Command local-up runs a local control plane for trying freshcache: an
// embedded etcd (one member, or three on loopback) in this process, and one or
// more kube-apiserver child processes against it. It writes credentials and a
// kubeconfig per apiserver under --data-dir, prints how to use them, and on
// Ctrl-C stops everything. Flags it does not know go to kube-apiserver.
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

	"github.com/freshcache/freshcache/pkg/localup"
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
			"Runs an embedded etcd and kube-apiserver(s) on loopback. Flags not listed\n"+
			"below are passed to kube-apiserver, e.g. --watch-cache-implementation=upstream\n"+
			"or --feature-gates=FreshResourceVersionZero=true.\n\n")
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
		fmt.Println("Stopping kube-apiserver(s) and etcd ...")
		cluster.Stop()
		fmt.Println("Stopped. Data is kept in", opts.DataDir)
	}()

	fmt.Println()
	fmt.Println("Local control plane is ready. To use it:")
	for _, kc := range cluster.Kubeconfigs {
		abs, _ := filepath.Abs(kc)
		fmt.Printf("  export KUBECONFIG=%s; kubectl get ns\n", abs)
	}
	fmt.Println("Press Ctrl-C to stop.")

	exited := make(chan *localup.APIServer, len(cluster.APIServers))
	for _, s := range cluster.APIServers {
		go func() {
			<-s.Done()
			exited <- s
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case s := <-exited:
		return fmt.Errorf("%w\nlast lines of %s:\n%s", s.ExitError(), s.LogPath, s.TailLog(15))
	}
}
