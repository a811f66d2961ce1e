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
func runCluster(ctx context.Context, args []string) error {
	return runClusterKind(ctx, "cluster", args, clusterDefaults{
		nodes: []int{10, 50, 100}, repeat: 1, podRate: 5, allListRate: 0.5, calibListAllRate: 4, informers: 4, informerRestart: 30 * time.Second,
		setupInflight: 600, out: "docs/results/cluster.md", nodeKind: cluster.NodesHollow,
	})
}

// runScale is the scale benchmark (make bench-scale): the cluster
// benchmark on kwok nodes, with one kubelet-like pod watch per node (half
// with WatchListClient on) and a restart storm of them after the window;
// its closing line is "scale-bench ratios: ...".
func runScale(ctx context.Context, args []string) error {
	return runClusterKind(ctx, "scale", args, clusterDefaults{
		nodes: []int{1000}, repeat: 3, podRate: 20, allListRate: 0.05, calibListAllRate: 0.5, informers: 0,
		setupInflight: 5000, out: "docs/results/scale.md", nodeKind: cluster.NodesKwok,
		nodeWatches: true, storm: true, controllerQPS: 200, replicas: 100,
	})
}

// clusterDefaults are the flag defaults that differ between the cluster
// and the scale benchmark.
type clusterDefaults struct {
	nodes                []int
	repeat, informers    int
	podRate, allListRate float64
	// calibListAllRate: a LIST of 30,000 pods costs the apiserver most
	// of a core-second, so the scale benchmark calibrates it at a rate
	// this machine can answer; at 4/s every request was still in flight
	// at the window's end and the benchmark itself held them all (18 GB).
	calibListAllRate        float64
	informerRestart         time.Duration
	setupInflight, replicas int
	out, nodeKind           string
	nodeWatches, storm      bool
	controllerQPS           float64
}

func runClusterKind(ctx context.Context, name string, args []string, d clusterDefaults) (err error) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	cfg := cluster.Config{Progress: os.Stderr}
	if d.replicas == 0 {
		d.replicas = 30
	}
	var (
		out     string
		keep    bool
		verbose bool
		notes   []string
		seed    uint64
		merge   []string
		number  bool
	)
	fs.StringVar(&cfg.BinDir, "bin-dir", "_output/bin", "directory with local-up and the binaries it runs (make build)")
	fs.StringSliceVar(&cfg.Configs, "configs", cluster.AllConfigs, "configurations: "+strings.Join(cluster.AllConfigs, ", "))
	fs.StringVar(&cfg.NodeKind, "node-kind", d.nodeKind, "nodes: hollow (kubemark, a kubelet process each) or kwok (one kwok controller for all; local-up --kwok-nodes)")
	fs.IntSliceVar(&cfg.Nodes, "nodes", d.nodes, "node counts of the single-apiserver sweep, one cluster per count and configuration")
	fs.IntVar(&cfg.HANodes, "ha-nodes", 0, "nodes of the HA runs (2 kube-apiservers, 3 etcd members); 0 runs none (default for hollow nodes: the largest --nodes)")
	fs.IntVar(&cfg.Repeats, "repeat", d.repeat, "run every cell this many times, interleaved (each node count's configurations in turn, then again, the order rotated); the ratios are then the median over the repeats")
	fs.IntVar(&cfg.PodsPerNode, "pods-per-node", 30, "pods per node, in Deployments")
	fs.IntVar(&cfg.ReplicasPerDeployment, "replicas-per-deployment", d.replicas, "replicas of each Deployment at the start")
	fs.Float64Var(&cfg.PodRate, "pod-rate", d.podRate, "churn: pods created plus deleted per second, through Deployment scale-ups, scale-downs and rollouts")
	fs.Float64Var(&cfg.NodeListRate, "node-list-rate", 10, "LISTs per second of one node's pods (spec.nodeName), at each of rv=\"\" and rv=0")
	fs.Float64Var(&cfg.AllListRate, "all-list-rate", d.allListRate, "LISTs per second of every pod, at each of rv=\"\" and rv=0")
	fs.IntVar(&cfg.Informers, "informers", d.informers, "pod informers (every pod) in child processes, half with WatchListClient on")
	fs.DurationVar(&cfg.InformerRestart, "informer-restart", d.informerRestart, "each informer restarts (and relists) this often during the warm-up and the window; 0 never")
	fs.BoolVar(&cfg.NodeWatches, "node-watches", d.nodeWatches, "one pod watch per node on its own pods (spec.nodeName), as each kubelet has, half with WatchListClient on, in child processes")
	fs.BoolVar(&cfg.Storm, "storm", d.storm, "after the window, restart every node watch at once and measure until all have synced (needs --node-watches)")
	fs.DurationVar(&cfg.StormTimeout, "storm-timeout", 10*time.Minute, "bound on the restart storm")
	fs.Float64Var(&cfg.ControllerQPS, "controller-qps", d.controllerQPS, "the controller-manager's and scheduler's --kube-api-qps and burst (local-up --controller-kube-api-qps); 0 keeps their defaults")
	fs.Float64Var(&cfg.ProbeRate, "probe-rate", 2, "freshness probe writes per second, each read back four ways")
	fs.Uint64Var(&seed, "seed", 1, "seed of the churn schedule and of the readers' node choices")
	fs.DurationVar(&cfg.Warmup, "warmup", 15*time.Second, "churn before the measured window")
	fs.DurationVar(&cfg.Window, "window", 2*time.Minute, "measured window")
	fs.DurationVar(&cfg.CalibWindow, "calibration-window", 15*time.Second, "idle window, and the window of each calibrated read kind")
	fs.Float64Var(&cfg.CalibRate, "calibration-rate", 20, "requests per second of each calibrated read kind")
	fs.Float64Var(&cfg.CalibListAllRate, "calibration-list-all-rate", d.calibListAllRate, "requests per second of the calibrated LISTs of every pod")
	fs.DurationVar(&cfg.ReadyTimeout, "ready-timeout", 10*time.Minute, "bound on local-up's start, on the Deployments' rollout and on the informers' first sync")
	fs.IntVar(&cfg.SetupInflightPods, "setup-inflight-pods", d.setupInflight, "before the warm-up, Deployments are created while at most this many of their pods are not yet Running; 0 creates them all at once")
	fs.BoolVar(&cfg.CPUProfile, "apiserver-cpuprofile", true, "take a CPU profile of every kube-apiserver over the measured window (kube-apiserver-<i>.cpu.pprof in the cell's data directory, kept with --keep-data or --data-dir) and add its split by part (freshcache's pprof labels, then functions) to the report")
	fs.StringArrayVar(&cfg.LocalUpArgs, "local-up-arg", nil, "a flag passed to every cluster's local-up after the configuration's own, e.g. --local-up-arg=--consistent-read-timeout-action=reject (repeatable)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "local-up data directories go here; a temporary one, removed afterwards, when empty")
	fs.BoolVar(&keep, "keep-data", false, "keep the temporary data directory (logs of every component)")
	fs.StringVar(&out, "out", d.out, "markdown report; its JSON and plots go next to it (NAME.json, NAME.png)")
	fs.StringArrayVar(&notes, "note", nil, "a note stored in the report (repeatable)")
	fs.StringSliceVar(&merge, "from-json", nil, "run nothing: write one report from the cells of these reports' JSON (runs of the same load, no cell in two of them)")
	fs.BoolVar(&number, "number-repeats", false, "with --from-json: runs that did not repeat (--repeat=1) give their cells repeats 1, 2, ... in the order of the files, so one repeated run can be split over several (rotate --configs between them)")
	fs.BoolVarP(&verbose, "verbose", "v", false, "show klog output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Seed = seed
	if len(merge) > 0 {
		return mergeCluster(merge, out, notes, number)
	}
	if !fs.Changed("ha-nodes") && cfg.NodeKind != cluster.NodesKwok {
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
		dir, err := os.MkdirTemp("", "freshcache-"+name+"-")
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
func mergeCluster(paths []string, out string, notes []string, number bool) error {
	var runs []cluster.Report
	for _, p := range paths {
		r, err := cluster.ReadReport(p)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	// The merge is of the runs' kind (MergeReports refuses mixed ones):
	// a scale report renders its storm and its own closing line.
	id := report.NewIdentity(runs[0].Kind)
	id.Notes = notes
	if number {
		runs = cluster.NumberRepeats(runs)
	}
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
	plots, perr := cluster.Plot(rows, dir, base, rep.Settings.NodeKind)
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
	fmt.Fprintf(os.Stderr, "# wrote %s, %s.json and %d plot(s)\n", out, filepath.Join(dir, base), len(plots))
	if rep.Settings.NodeKind == cluster.NodesKwok {
		fmt.Println(cluster.ComputeRatios(rows).ScaleLine())
	} else {
		fmt.Println(cluster.ComputeRatios(rows).Line())
	}
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
	fs.StringVar(&cfg.NodePrefix, "node-prefix", "", "with --node-count: node i is <prefix><i>")
	fs.IntVar(&cfg.NodeFirst, "node-first", 0, "with --node-count: the first node's index")
	fs.IntVar(&cfg.NodeCount, "node-count", 0, "when positive, instead of --informers, one informer per node on the pods bound to it (spec.nodeName), as kubelets have")
	if err := fs.Parse(args); err != nil {
		return err
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	return cluster.RunInformerChild(ctx, cfg, os.Stdin, os.Stdout)
}
