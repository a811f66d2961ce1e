package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/freshcache/freshcache/tools/bench/cluster"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// runCluster is the cluster-level A/B benchmark (make bench-cluster): a
// fresh local-up cluster per configuration and node count under the same
// seeded load. It writes the markdown (and JSON and PNGs next to it) and
// ends with one line on stdout: the ratios.
func runCluster(ctx context.Context, args []string) (err error) {
	fs := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	cfg := cluster.Config{Progress: os.Stderr}
	var (
		out     string
		keep    bool
		verbose bool
		notes   []string
		seed    uint64
		merge   []string
	)
	fs.StringVar(&cfg.BinDir, "bin-dir", "_output/bin", "directory with local-up and the binaries it runs (make build)")
	fs.StringSliceVar(&cfg.Configs, "configs", cluster.AllConfigs, "configurations: "+strings.Join(cluster.AllConfigs, ", "))
	fs.IntSliceVar(&cfg.Nodes, "nodes", []int{10, 50, 100}, "hollow-node counts of the single-apiserver sweep, one cluster per count and configuration")
	fs.IntVar(&cfg.HANodes, "ha-nodes", 0, "hollow nodes of the HA runs (2 kube-apiservers, 3 etcd members); 0 runs none (default: the largest --nodes)")
	fs.IntVar(&cfg.Repeats, "repeat", 1, "run every cell this many times, interleaved (each node count's configurations in turn, then again, the order rotated); the ratios are then the median over the repeats")
	fs.IntVar(&cfg.PodsPerNode, "pods-per-node", 30, "pods per hollow node, in Deployments")
	fs.IntVar(&cfg.ReplicasPerDeployment, "replicas-per-deployment", 30, "replicas of each Deployment at the start")
	fs.Float64Var(&cfg.PodRate, "pod-rate", 5, "churn: pods created plus deleted per second, through Deployment scale-ups, scale-downs and rollouts")
	fs.Float64Var(&cfg.NodeListRate, "node-list-rate", 10, "LISTs per second of one node's pods (spec.nodeName), at each of rv=\"\" and rv=0")
	fs.Float64Var(&cfg.AllListRate, "all-list-rate", 0.5, "LISTs per second of every pod, at each of rv=\"\" and rv=0")
	fs.IntVar(&cfg.Informers, "informers", 4, "pod informers in child processes, half with WatchListClient on")
	fs.DurationVar(&cfg.InformerRestart, "informer-restart", 30*time.Second, "each informer restarts (and relists) this often during the warm-up and the window; 0 never")
	fs.Float64Var(&cfg.ProbeRate, "probe-rate", 2, "freshness probe writes per second, each read back four ways")
	fs.Uint64Var(&seed, "seed", 1, "seed of the churn schedule and of the readers' node choices")
	fs.DurationVar(&cfg.Warmup, "warmup", 15*time.Second, "churn before the measured window")
	fs.DurationVar(&cfg.Window, "window", 2*time.Minute, "measured window")
	fs.DurationVar(&cfg.CalibWindow, "calibration-window", 15*time.Second, "idle window, and the window of each calibrated read kind")
	fs.Float64Var(&cfg.CalibRate, "calibration-rate", 20, "requests per second of each calibrated read kind")
	fs.Float64Var(&cfg.CalibListAllRate, "calibration-list-all-rate", 4, "requests per second of the calibrated LISTs of every pod")
	fs.DurationVar(&cfg.ReadyTimeout, "ready-timeout", 10*time.Minute, "bound on local-up's start, on the Deployments' rollout and on the informers' first sync")
	fs.IntVar(&cfg.SetupInflightPods, "setup-inflight-pods", 600, "before the warm-up, Deployments are created while at most this many of their pods are not yet Running; 0 creates them all at once")
	fs.StringArrayVar(&cfg.LocalUpArgs, "local-up-arg", nil, "a flag passed to every cluster's local-up after the configuration's own, e.g. --local-up-arg=--consistent-read-timeout-action=reject (repeatable)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "local-up data directories go here; a temporary one, removed afterwards, when empty")
	fs.BoolVar(&keep, "keep-data", false, "keep the temporary data directory (logs of every component)")
	fs.StringVar(&out, "out", "docs/results/cluster.md", "markdown report; its JSON and plots go next to it (NAME.json, NAME-*.png)")
	fs.StringArrayVar(&notes, "note", nil, "a note stored in the report (repeatable)")
	fs.StringSliceVar(&merge, "from-json", nil, "run nothing: write one report from the cells of these reports' JSON (runs of the same load, no cell in two of them)")
	fs.BoolVarP(&verbose, "verbose", "v", false, "show klog output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Seed = seed
	if len(merge) > 0 {
		return mergeCluster(merge, out, notes)
	}
	if !fs.Changed("ha-nodes") {
		for _, n := range cfg.Nodes {
			cfg.HANodes = max(cfg.HANodes, n)
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if out == "" {
		return errors.New("--out: a path is needed")
	}
	if !verbose {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	if cfg.Self, err = os.Executable(); err != nil {
		return err
	}
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "freshcache-cluster-")
		if err != nil {
			return err
		}
		if keep {
			fmt.Fprintln(os.Stderr, "# data in", dir)
		} else {
			// Failed cells keep their data and logs; the rest go as
			// each cell ends, and the directory with them if none failed.
			cfg.RemovePassedCells = true
			defer func() {
				if err == nil {
					os.RemoveAll(dir)
				} else {
					fmt.Fprintln(os.Stderr, "# data of the failed cells kept in", dir)
				}
			}()
		}
		cfg.DataDir = dir
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}

	rows, runErr := cluster.Run(ctx, cfg)
	rep := cluster.NewReport(cfg, rows, runErr)
	rep.Notes = notes
	if len(rows) == 0 {
		return runErr
	}
	return errors.Join(runErr, writeClusterOutputs(rep, out))
}

// mergeCluster writes one report from the cells of several runs' JSON.
func mergeCluster(paths []string, out string, notes []string) error {
	var runs []cluster.Report
	for _, p := range paths {
		r, err := cluster.ReadReport(p)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	id := report.NewIdentity("cluster")
	id.Notes = notes
	rep, err := cluster.MergeReports(id, runs)
	if err != nil {
		return err
	}
	return writeClusterOutputs(rep, out)
}

// writeClusterOutputs writes the markdown at out, its JSON and plots next
// to it, and prints the closing line.
func writeClusterOutputs(rep cluster.Report, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	rows := rep.Cells
	dir, base := filepath.Dir(out), strings.TrimSuffix(filepath.Base(out), ".md")
	plots, perr := cluster.Plot(rows, dir, base)
	var rel []string
	for _, p := range plots {
		rel = append(rel, filepath.Base(p))
	}
	jerr := rep.WriteJSON(filepath.Join(dir, base+".json"))
	w, done, oerr := createOut(out)
	if oerr != nil {
		return errors.Join(perr, jerr, oerr)
	}
	merr := cluster.WriteMarkdown(w, rep, rel)
	derr := done()
	fmt.Fprintf(os.Stderr, "# wrote %s, %s.json and %d plots\n", out, filepath.Join(dir, base), len(plots))
	fmt.Println(cluster.ComputeRatios(rows).Line())
	return errors.Join(perr, jerr, merr, derr)
}

// runClusterInformers is the informer child of runCluster (not for direct
// use): pod informers on one apiserver until stdin closes.
func runClusterInformers(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet(cluster.InformerChildSubcommand, pflag.ContinueOnError)
	var cfg cluster.InformerChildConfig
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of the apiserver")
	fs.BoolVar(&cfg.WatchListClient, "watch-list-client", true, "client-go's WatchListClient feature for these informers")
	fs.IntVar(&cfg.Informers, "informers", 1, "pod informers")
	fs.DurationVar(&cfg.RestartEvery, "restart-every", 0, "restart each informer this often; 0 never")
	fs.DurationVar(&cfg.RestartFor, "restart-for", 0, "restart only during this long from the start")
	if err := fs.Parse(args); err != nil {
		return err
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	return cluster.RunInformerChild(ctx, cfg, os.Stdin, os.Stdout)
}
