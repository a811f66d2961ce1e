package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/lab/pkg/etcdlocal"
)

// runEtcd serves the storage benchmark's etcd (same options as the
// embedded one: one member, no fsync) in a process of its own until it is
// interrupted. With storage --etcd-endpoint it separates etcd's Go runtime
// from the caches', as in a real control plane, on the same cores.
func runEtcd(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("etcd", pflag.ContinueOnError)
	var cm common
	port := 0
	cm.addDataDir(fs)
	fs.IntVar(&port, "port", 0, "client port on 127.0.0.1; 0 picks a free one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, cleanup, err := cm.setup()
	if err != nil {
		return err
	}
	defer cleanup()
	cluster, err := etcdlocal.Start(ctx, etcdlocal.Options{DataDir: dir, UnsafeNoFsync: true, ClientPorts: []int{port}})
	if err != nil {
		return err
	}
	defer cluster.Close()
	fmt.Fprintln(os.Stdout, cluster.Endpoints()[0])
	<-ctx.Done()
	return nil
}
