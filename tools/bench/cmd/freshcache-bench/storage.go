package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/freshcache/freshcache/tools/bench/storage"
)

// common flags of every subcommand that starts an embedded etcd.
type common struct {
	outDir  string
	name    string
	dataDir string
	notes   []string
	verbose bool
}

func (c *common) add(fs *pflag.FlagSet, defaultName string) {
	fs.StringVar(&c.outDir, "out-dir", "docs/results", "directory for the JSON, markdown and PNG results; empty writes none")
	fs.StringVar(&c.name, "name", defaultName, "file name prefix of the results in --out-dir")
	c.addDataDir(fs)
	fs.StringArrayVar(&c.notes, "note", nil, "a note stored in the JSON and markdown (repeatable), e.g. the state of the code measured")
	fs.BoolVarP(&c.verbose, "verbose", "v", false, "show klog output of the caches")
}

// addDataDir registers --data-dir alone, for subcommands that write no
// results (etcd).
func (c *common) addDataDir(fs *pflag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", "", "etcd data directory; a temporary one, removed afterwards, when empty")
}

// setup quiets klog and makes the data directory; the returned func removes
// it when it was temporary.
func (c *common) setup() (string, func(), error) {
	if !c.verbose {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	if c.dataDir != "" {
		return c.dataDir, func() {}, os.MkdirAll(c.dataDir, 0o755)
	}
	d, err := os.MkdirTemp("", "freshcache-bench-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { _ = os.RemoveAll(d) }, nil
}

func (c *common) path(suffix string) string {
	return filepath.Join(c.outDir, c.name+suffix)
}

func runStorage(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("storage", pflag.ContinueOnError)
	var (
		cm       common
		cfg      storage.Config
		conc     []int
		sweep    []float64
		progress bool
		noSweep  bool
		cpuProf  string
		memProf  string
		endpoint string
	)
	cm.add(fs, "storage")
	fs.IntVar(&cfg.Shape.Pods, "pods", 20000, "pods in etcd")
	fs.IntVar(&cfg.Shape.Nodes, "nodes", 200, "nodes the pods are spread over")
	fs.StringSliceVar(&cfg.Backends, "backends", storage.AllBackends, "backends to measure, in order")
	fs.StringSliceVar(&cfg.Scenarios, "scenarios", storage.AllScenarios, "scenarios to run")
	fs.StringSliceVar(&cfg.EtcdScenarios, "etcd-scenarios", nil, "scenarios for the etcd backend when it should run fewer (large shapes); default: --scenarios")
	fs.StringSliceVar(&cfg.RVs, "rvs", []string{"consistent", "0", "N"}, `resourceVersion modes: consistent (rv=""), 0, N (newest written revision)`)
	fs.IntSliceVar(&conc, "concurrency", []int{1, 4, 32}, "concurrency levels (watch-fanout: watchers per watched node)")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "measured time per row")
	fs.DurationVar(&cfg.Warmup, "warmup", 500*time.Millisecond, "unmeasured time before each row")
	fs.DurationVar(&cfg.Prime, "prime", 3*time.Second, "unmeasured load on each backend before its first row (every rv mode of the first scenario), so that row order does not bias the figures")
	fs.Float64Var(&cfg.Load.PodWritesPerSec, "pod-write-rate", 10, "background pod updates per second")
	fs.Float64Var(&cfg.Load.LeaseWritesPerSec, "lease-write-rate", 100, "background lease renewals per second (another resource)")
	fs.IntVar(&cfg.WatchNodes, "watch-nodes", 10, "watch-fanout: number of watched nodes")
	fs.Float64Var(&cfg.WatchWritesPerSec, "watch-write-rate", 100, "watch-fanout: pod updates per second on the watched nodes")
	fs.DurationVar(&cfg.WatchSetupTimeout, "watch-setup-timeout", time.Minute, "watch-fanout: bound on opening watchers and draining initial events")
	fs.Float64SliceVar(&sweep, "sweep-lease-rates", []float64{0, 50, 100, 200, 400}, "freshness sweep: lease write rates for list-node rv=\"\" rows")
	fs.BoolVar(&noSweep, "no-sweep", false, "skip the freshness sweep")
	fs.IntVar(&cfg.SweepConcurrency, "sweep-concurrency", 4, "freshness sweep: concurrency")
	fs.DurationSliceVar(&cfg.GateControl, "gate-control", nil, "control rows for each cache backend: list-node rv=0 at the highest concurrency, each op first waiting for a shared gate that opens once per period (e.g. 700us,1500us,3ms); what a wait of that length costs a closed loop, with no etcd involved")
	fs.StringVar(&cfg.OracleClient, "oracle-client", storage.OracleGRPC, "how freshcache's revision oracle reaches etcd: grpc (as in kube-apiserver) or in-process (etcd's in-process client on the embedded member: no gRPC on either side; a diagnostic, not with --etcd-endpoint)")
	fs.BoolVar(&progress, "progress", true, "print each row as it finishes (stderr)")
	fs.StringVar(&cpuProf, "cpuprofile", "", "write one CPU profile of the whole run after the data load (each backend's start with its initial list, priming, warm-ups and rows) to this file; for the measured part of each row alone use --cpuprofile-dir")
	fs.StringVar(&cfg.CPUProfileDir, "cpuprofile-dir", "", "write a CPU profile of the measured part of every closed-loop row (not watch-fanout) into this directory, and add the row's CPU per op split by part to the report")
	fs.StringVar(&cfg.TraceDir, "trace-dir", "", "write an execution trace of the measured part of every row into this directory (slows the rows; read with trace-wait)")
	fs.StringVar(&memProf, "memprofile", "", "write an allocation profile (alloc_space) at the end to this file")
	fs.StringVar(&endpoint, "etcd-endpoint", "", "load the data into this etcd (e.g. one started by 'freshcache-bench etcd' in its own process) instead of an embedded one; its CPU is then not in cpu ms/op, and etcd req/op counts nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cpuProf != "" && cfg.CPUProfileDir != "" {
		return fmt.Errorf("--cpuprofile and --cpuprofile-dir exclude each other: a process runs one CPU profile at a time")
	}
	rvs, err := parseRVs(cfg.RVs)
	if err != nil {
		return err
	}
	if noSweep {
		sweep = nil
	}
	cfg.RVs, cfg.Concurrency, cfg.SweepLeaseRates = rvs, conc, sweep
	if progress {
		cfg.Progress = os.Stderr
	}
	dir, cleanup, err := cm.setup()
	if err != nil {
		return err
	}
	defer cleanup()

	report := storage.NewReport("storage")
	report.Notes = cm.notes
	t0 := time.Now()
	var env *storage.Env
	if endpoint != "" {
		env, err = storage.AttachEnv(ctx, endpoint, cfg.Shape)
		report.Notes = append(report.Notes, "etcd runs in its own process at "+endpoint+": cpu ms/op is this process's alone, and etcd req/op counts nothing (the counters are an embedded server's)")
	} else {
		env, err = storage.StartEnv(ctx, dir, cfg.Shape)
	}
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Fprintf(os.Stderr, "# loaded %d pods on %d nodes into %s in %v\n", env.Shape.Pods, env.Shape.Nodes, env.Endpoint, time.Since(t0).Round(time.Millisecond))
	cfg = cfg.WithDefaults()
	report.Config = &cfg
	if cpuProf != "" {
		f, err := os.Create(cpuProf)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	rows, err := storage.Run(ctx, env, cfg)
	report.Rows = rows
	if memProf != "" {
		if werr := writeHeapProfile(memProf); werr != nil && err == nil {
			err = werr
		}
	}
	if len(rows) > 0 {
		if werr := storage.WriteTable(os.Stdout, rows); werr != nil && err == nil {
			err = werr
		}
	}
	if cm.outDir != "" && len(rows) > 0 {
		if werr := writeStorageResults(cm, report); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// writeStorageResults writes the JSON and markdown of a storage run, then
// its plots.
func writeStorageResults(cm common, report storage.Report) error {
	if err := writeReport(cm, report.WriteJSON, func(w io.Writer) { storage.WriteMarkdown(w, report) }); err != nil {
		return err
	}
	paths, err := storage.Plot(report, cm.outDir, cm.name)
	for _, p := range paths {
		fmt.Fprintln(os.Stderr, "# wrote", p)
	}
	return err
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func parseRVs(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		switch strings.Trim(s, `"' `) {
		case "", "consistent":
			out = append(out, storage.RVConsistent)
		case "0":
			out = append(out, storage.RVZero)
		case "N", "n":
			out = append(out, storage.RVNewest)
		default:
			return nil, fmt.Errorf("--rvs: unknown mode %q (want consistent, 0 or N)", s)
		}
	}
	return out, nil
}
