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

	"github.com/freshcache/freshcache/tools/bench/diag/netpollfloor"
	"github.com/freshcache/freshcache/tools/bench/diag/tracewait"
	"github.com/freshcache/freshcache/tools/bench/hollownodes"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// The diagnostics (hollow-nodes, netpoll-floor, trace-wait) write their
// markdown themselves, each under the same kind of heading: its name and
// date, then what made it.

// writeDiagHeading writes a diagnostic's heading, "# freshcache-bench
// NAME: DATE", and one list item for each of items.
func writeDiagHeading(w io.Writer, name string, items ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# freshcache-bench %s: %s\n\n", name, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	for _, item := range items {
		b.WriteString("- " + item + "\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// commitItem is a heading item naming the commit the binary was built from.
func commitItem() string { return fmt.Sprintf("commit: `%s`", report.GitCommit()) }

// commandItem is a heading item quoting this command line.
func commandItem() string { return fmt.Sprintf("command: `%s`", strings.Join(os.Args, " ")) }

// runHollowNodes measures what a kubemark hollow node costs here: local-up
// with the controllers and N hollow nodes, idle and under pod churn
// (docs/hollow-nodes.md).
func runHollowNodes(ctx context.Context, args []string) (err error) {
	fs := pflag.NewFlagSet("hollow-nodes", pflag.ContinueOnError)
	cfg := hollownodes.Config{Progress: os.Stderr}
	var out string
	fs.StringVar(&cfg.BinDir, "bin-dir", "_output/bin", "directory with local-up and the binaries it runs (make build)")
	fs.IntSliceVar(&cfg.Nodes, "nodes", []int{10, 30, 60}, "node counts, one local-up each")
	fs.DurationVar(&cfg.Settle, "settle", 30*time.Second, "pause after local-up is ready, before the idle window")
	fs.DurationVar(&cfg.Window, "window", time.Minute, "length of the idle window and of the churn window")
	fs.IntVar(&cfg.PodsPerNode, "pods-per-node", 5, "replicas of the churn Deployment per node")
	fs.Float64Var(&cfg.DeletesPerSec, "deletes-per-sec", 5, "churn: pods deleted per second (each replaced by its ReplicaSet)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "local-up data directories go here; a temporary one when empty")
	fs.StringVar(&out, "out", "", "write the markdown to this file instead of standard output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "freshcache-hollow-nodes-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	rows, err := hollownodes.Measure(ctx, cfg)
	if len(rows) == 0 {
		return err
	}
	w, done, oerr := createOut(out)
	if oerr != nil {
		return errors.Join(err, oerr)
	}
	defer func() { err = errors.Join(err, done()) }()
	m := report.ThisMachine()
	if werr := writeDiagHeading(w, "hollow-nodes", commitItem(), fmt.Sprintf("machine: %s, %d cores, %s", m.CPU, m.Cores, m.OS), commandItem()); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		fmt.Fprintf(w, "Stopped early: %v\n\n", err)
	}
	return errors.Join(err, hollownodes.WriteMarkdown(w, cfg, rows))
}

// runNetpollFloor times a loopback TCP round trip and a channel round trip
// while busy goroutines keep the cores saturated, for each busy count: what
// the Go network poller adds to any socket round trip, a revision fetch's
// included, at the consistent-read target load (package netpollfloor).
func runNetpollFloor(ctx context.Context, args []string) (err error) {
	fs := pflag.NewFlagSet("netpoll-floor", pflag.ContinueOnError)
	var (
		out   string
		busy  []int
		flags netpollfloor.Options
	)
	fs.StringVar(&out, "out", "", "write the markdown to this file instead of standard output")
	fs.IntSliceVar(&busy, "busy", []int{0, 2, 8, 16, 32, 64}, "busy goroutine counts, one measurement each")
	fs.DurationVar(&flags.Work, "work", 150*time.Microsecond, "CPU each busy goroutine burns between two waits")
	fs.DurationVar(&flags.GatePeriod, "gate", 500*time.Microsecond, "how often the shared gate the busy goroutines park on opens")
	fs.IntVar(&flags.Samples, "samples", 2000, "round trips of each kind per measurement")
	fs.DurationVar(&flags.Pause, "pause", 200*time.Microsecond, "pause between two pairs of round trips")
	if err := fs.Parse(args); err != nil {
		return err
	}
	w, done, err := createOut(out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, done()) }()
	results := make([]netpollfloor.Result, 0, len(busy))
	for _, n := range busy {
		o := flags
		o.Busy = n
		r, err := netpollfloor.Measure(ctx, o)
		if err != nil {
			return fmt.Errorf("netpoll-floor: busy=%d: %w", n, err)
		}
		fmt.Fprintf(os.Stderr, "busy=%d: tcp p50 %v, chan p50 %v\n", n, r.TCP.P50, r.Chan.P50)
		results = append(results, r)
	}
	m := report.ThisMachine()
	if err := writeDiagHeading(w, "netpoll-floor", commitItem(),
		fmt.Sprintf("machine: %s, %d cores (GOMAXPROCS %d), %s, %s", m.CPU, m.Cores, m.GOMAXPROCS, m.GoVersion, m.OS), commandItem(),
		"how to read this: tools/bench/diag/netpollfloor/doc.go; docs/investigations/consistent-read-cost.md"); err != nil {
		return err
	}
	return netpollfloor.WriteMarkdown(w, results)
}

// runTraceWait reads execution traces (storage --trace-dir, or
// kube-apiserver's /debug/pprof/trace?seconds=N) and prints, for each, where
// freshcache's freshness waits went: until release, release to running,
// the revision fetches, the GC mark share and who held the CPU.
func runTraceWait(args []string) (err error) {
	fs := pflag.NewFlagSet("trace-wait", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: freshcache-bench trace-wait [flags] TRACE...")
		fs.PrintDefaults()
	}
	var (
		out  string
		opts tracewait.Options
	)
	fs.StringVar(&out, "out", "", "write the markdown to this file instead of standard output")
	fs.Float64Var(&opts.SlowQuantile, "slow-quantile", 0.99, "quantile of the total wait from which a wait counts as slow")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("trace-wait: no trace file given")
	}
	w, done, err := createOut(out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, done()) }()
	if out != "" {
		// A results file says what it was made from, like the storage runs'.
		if err := writeDiagHeading(w, "trace-wait", fmt.Sprintf("analysed by: `%s` (commit `%s`)", strings.Join(os.Args, " "), report.GitCommit()),
			"traces: the rows of the storage run that wrote them (`--trace-dir`); how to read this: tools/bench/diag/tracewait/doc.go"); err != nil {
			return err
		}
	}
	for _, path := range fs.Args() {
		rep, err := analyzeFile(path, opts)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "## %s\n\n", filepath.Base(path)); err != nil {
			return err
		}
		if err := rep.WriteMarkdown(w); err != nil {
			return err
		}
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	return nil
}

func analyzeFile(path string, opts tracewait.Options) (tracewait.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return tracewait.Report{}, err
	}
	defer func() { _ = f.Close() }()
	rep, err := tracewait.Analyze(f, opts)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}
