package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/tools/bench/apiserver"
	"github.com/freshcache/freshcache/tools/bench/storage"
)

func runAPIServer(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("apiserver", pflag.ContinueOnError)
	var (
		cm  common
		cfg apiserver.Config
	)
	cm.add(fs, "apiserver")
	fs.StringVar(&cfg.BinDir, "bin-dir", "_output/bin", "directory with local-up and kube-apiserver (make build)")
	fs.StringSliceVar(&cfg.Impls, "impls", []string{storage.BackendUpstream, storage.BackendFreshcache}, "--watch-cache-implementation of each kube-apiserver")
	fs.StringVar(&cfg.Fallback, "fallback", "", "when kube-apiserver refuses an implementation, run this one in its place (rows labelled FALLBACK-as-IMPL); empty skips it")
	fs.IntVar(&cfg.Shape.Pods, "pods", 5000, "pods written to etcd")
	fs.IntVar(&cfg.Shape.Nodes, "nodes", 50, "nodes the pods are spread over")
	fs.IntSliceVar(&cfg.Clients, "clients", []int{1, 32}, "concurrent clients (watch: watchers)")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "measured time per row")
	fs.DurationVar(&cfg.Warmup, "warmup", 500*time.Millisecond, "unmeasured time before each row")
	fs.Float64Var(&cfg.Load.PodWritesPerSec, "pod-write-rate", 10, "background pod updates per second (straight to etcd)")
	fs.Float64Var(&cfg.Load.LeaseWritesPerSec, "lease-write-rate", 100, "background lease renewals per second (straight to etcd)")
	fs.IntVar(&cfg.WatchNodes, "watch-nodes", 10, "watch: number of watched nodes")
	fs.Float64Var(&cfg.WatchWritesPerSec, "watch-write-rate", 100, "watch: pod updates per second on the watched nodes")
	fs.StringVar(&cfg.ProfileDir, "cpuprofile-dir", "", "write a CPU profile of each kube-apiserver over each measured LIST and GET row into this directory (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, cleanup, err := cm.setup()
	if err != nil {
		return err
	}
	defer cleanup()
	cfg.DataDir = dir
	cfg.Progress = os.Stderr

	report := apiserver.NewReport()
	rows, notes, err := apiserver.Run(ctx, cfg)
	report.Servers = rows
	report.Notes = append(cm.notes, notes...)
	report.Notes = append(report.Notes, fmt.Sprintf("shape: %d pods on %d nodes; %v per row; background %g pod and %g lease writes/s straight to etcd; watch: %g pod writes/s on %d nodes",
		cfg.Shape.Pods, cfg.Shape.Nodes, cfg.Duration, cfg.Load.PodWritesPerSec, cfg.Load.LeaseWritesPerSec, cfg.WatchWritesPerSec, cfg.WatchNodes))
	report.Notes = append(report.Notes, "etcd req/op: what the server under test counts itself, per op: its store's etcd_requests_total, and freshcache's revision fetches and progress requests (upstream's cacher does not count its progress requests). "+
		"freshcache asks etcd for progress after each write it did not send itself, to apply that revision whole at once: the background's writes go straight to etcd, so its rows carry about one progress request per background write, most visible in the 1-client rv=0 rows")
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "# note:", n)
	}
	if len(rows) > 0 {
		if werr := apiserver.WriteTable(os.Stdout, rows); werr != nil && err == nil {
			err = werr
		}
		if cm.outDir != "" {
			if werr := writeReport(cm, report.WriteJSON, func(w io.Writer) { apiserver.WriteMarkdown(w, report) }); werr != nil && err == nil {
				err = werr
			}
		}
	}
	return err
}

// writeReport writes a report's JSON (js) and markdown (md) into
// --out-dir.
func writeReport(cm common, js func(path string) error, md func(io.Writer)) error {
	if err := os.MkdirAll(cm.outDir, 0o755); err != nil {
		return err
	}
	if err := js(cm.path(".json")); err != nil {
		return err
	}
	if err := writeMarkdown(cm.path(".md"), md); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "# wrote", cm.path(".json"), cm.path(".md"))
	return nil
}

// writeMarkdown writes a report's markdown (md) to path.
func writeMarkdown(path string, md func(io.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	md(f)
	return f.Close()
}
