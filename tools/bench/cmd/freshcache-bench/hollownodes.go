package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/tools/bench/hollownodes"
	"github.com/freshcache/freshcache/tools/bench/report"
)

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
	if _, werr := fmt.Fprintf(w, "# freshcache-bench hollow-nodes: %s\n\n- commit: `%s`\n- machine: %s, %d cores, %s\n- command: `%s`\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), report.GitCommit(), m.CPU, m.Cores, m.OS, strings.Join(os.Args, " ")); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		fmt.Fprintf(w, "Stopped early: %v\n\n", err)
	}
	return errors.Join(err, hollownodes.WriteMarkdown(w, cfg, rows))
}
