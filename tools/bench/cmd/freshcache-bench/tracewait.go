package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/tools/bench/diag/tracewait"
	"github.com/freshcache/freshcache/tools/bench/report"
)

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
		if _, err := fmt.Fprintf(w, "# freshcache-bench trace-wait: %s\n\n- analysed by: `%s` (commit `%s`)\n- traces: the rows of the storage run that wrote them (`--trace-dir`); how to read this: tools/bench/diag/tracewait/doc.go\n\n",
			time.Now().UTC().Format("2006-01-02 15:04 UTC"), strings.Join(os.Args, " "), report.GitCommit()); err != nil {
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
