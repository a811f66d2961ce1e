// Command freshcache-bench measures freshcache side by side with reading
// from etcd and with upstream's cacher. See docs/results/README.md.
//
//	freshcache-bench storage   [flags]  storage level, one process, one embedded etcd
//	freshcache-bench memory    [flags]  heap per cached object
//	freshcache-bench apiserver [flags]  through two kube-apiservers on one etcd
//	freshcache-bench plot      [flags]  redraw PNGs from JSON results
//	freshcache-bench etcd      [flags]  an etcd in a process of its own, for storage --etcd-endpoint
//	freshcache-bench trace-wait [flags] TRACE...  where the freshness waits in an execution trace went
//	freshcache-bench netpoll-floor [flags]  a socket round trip against a channel one, on busy cores
//	freshcache-bench hollow-nodes [flags]  what a kubemark hollow node costs (local-up --nodes=N)
//	freshcache-bench cluster [flags]  cluster-level A/B: local-up clusters under the same seeded load
//	freshcache-bench scale [flags]    the cluster A/B on 1,000+ kwok nodes, kubelet pod watches and a restart storm
//	freshcache-bench kep-2340 [flags] KEP-2340's shape: 100,000+ configmaps of 1 KiB, 1 consistent LIST/s matching nothing
//	freshcache-bench stall [flags]    etcd stopped under consistent LISTs: apiserver and etcd memory, answers (kubernetes#138494)
//	freshcache-bench watchlist [flags]  fresh reads while WatchLists stream a huge resource (kubernetes#138728)
//
// This command only parses flags and writes files; each benchmark is a
// package of this module, whose doc.go says what it measures and how:
//
//	storage, memory, plot      tools/bench/storage (plot renders apiserver reports with tools/bench/apiserver)
//	apiserver                  tools/bench/apiserver
//	cluster, scale, cluster-informers tools/bench/cluster (cluster-informers is its informer child, not for direct use)
//	hollow-nodes               tools/bench/hollownodes
//	kep-2340                   tools/bench/kepshape
//	stall, watchlist           tools/bench/stall, tools/bench/watchlist
//	trace-wait, netpoll-floor  tools/bench/diag/tracewait, tools/bench/diag/netpollfloor
//	etcd                       lab/pkg/etcdlocal of the root module
//
// What they share: tools/bench/report (a run's identity, JSON files, plot
// layout), servermetrics (the servers' /metrics), procfs (/proc),
// etcdload (bulk writes to etcd), configcheck (the scenarios' Config.Validate),
// promtext and quantile.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/freshcache/freshcache/tools/bench/cluster"
)

// subcommands runs each subcommand on the arguments after its name; plot
// and trace-wait only read files and take no context.
var subcommands = map[string]func(ctx context.Context, args []string) error{
	"storage":       runStorage,
	"memory":        runMemory,
	"apiserver":     runAPIServer,
	"plot":          func(_ context.Context, args []string) error { return runPlot(args) },
	"etcd":          runEtcd,
	"trace-wait":    func(_ context.Context, args []string) error { return runTraceWait(args) },
	"netpoll-floor": runNetpollFloor,
	"hollow-nodes":  runHollowNodes,
	"kep-2340":      runKEP2340,
	"scale":         runScale,
	"cluster":       runCluster,
	"stall":         runStall,
	"watchlist":     runWatchList,

	cluster.InformerChildSubcommand: runClusterInformers,
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch os.Args[1] {
	case "-h", "--help", "help":
		usage()
		return
	}
	run, ok := subcommands[os.Args[1]]
	if !ok {
		usage()
		os.Exit(2)
	}
	if err := run(ctx, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "freshcache-bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: freshcache-bench storage|memory|apiserver|plot|etcd|trace-wait|netpoll-floor|hollow-nodes|cluster|stall|watchlist [flags]
  storage    storage-level benchmark: etcd vs upstream cacher vs freshcache
  memory     heap per cached object, upstream vs freshcache
  apiserver  through two kube-apiservers (local-up) on one etcd
  plot       redraw the PNG plots from JSON results
  etcd       run the storage benchmark's etcd in a process of its own
  trace-wait where the freshness waits in an execution trace went (storage --trace-dir)
  netpoll-floor  a loopback TCP round trip against a channel one while busy goroutines saturate the cores
  hollow-nodes   what a kubemark hollow node costs: local-up --nodes=N, idle and under pod churn
  cluster        cluster-level A/B: upstream, freshcache, freshcache+FreshResourceVersionZero on local-up clusters under the same load
  stall          etcd stopped (SIGSTOP) under consistent LISTs of a large resource: apiserver and etcd RSS, answers by status, recovery (kubernetes#138494)
  watchlist      fresh reads while WatchLists stream a huge resource (kubernetes#138728), upstream vs freshcache (+FreshResourceVersionZero)
Run a subcommand with -h for its flags.
`)
}

// createOut opens path for a subcommand's markdown, or standard output when
// path is empty. done closes the file and returns the error closing it
// reports (a write the kernel refused late); call it once, after the last
// write.
func createOut(path string) (w io.Writer, done func() error, err error) {
	if path == "" {
		return os.Stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}
