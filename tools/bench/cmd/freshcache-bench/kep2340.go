package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/freshcache/freshcache/tools/bench/kepshape"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// runKEP2340 is KEP-2340's own benchmark shape (make bench-kep-2340): it
// writes the markdown and, next to it, the JSON, and ends with the ratios
// line on stdout.
func runKEP2340(ctx context.Context, args []string) (err error) {
	fs := pflag.NewFlagSet("kep-2340", pflag.ContinueOnError)
	cfg := kepshape.DefaultConfig()
	var (
		out, dataDir string
		short, keep  bool
		notes        []string
	)
	fs.BoolVar(&short, "short", false, "the harness check: 10,000 objects, a 30 s window (other flags still apply on top)")
	fs.StringVar(&cfg.BinDir, "bin-dir", "_output/bin", "directory with local-up and kube-apiserver (make build)")
	fs.StringSliceVar(&cfg.Configs, "configs", cfg.Configs, "configurations: "+strings.Join(kepshape.AllConfigs, ", "))
	fs.IntVar(&cfg.Objects, "objects", cfg.Objects, "configmaps (KEP-2340 used 300,000)")
	fs.IntVar(&cfg.Namespaces, "namespaces", cfg.Namespaces, "namespaces they are spread over")
	fs.IntVar(&cfg.ValueBytes, "value-bytes", cfg.ValueBytes, "bytes of each configmap's value")
	fs.IntVar(&cfg.LoadWriters, "load-writers", cfg.LoadWriters, "concurrent etcd writes while loading")
	fs.Float64Var(&cfg.ListRate, "list-rate", cfg.ListRate, "consistent LISTs per second, open loop")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "LISTs before the window, not measured")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "measured window")
	fs.DurationVar(&cfg.ListTimeout, "list-timeout", cfg.ListTimeout, "bound on one LIST")
	fs.DurationVar(&cfg.ReadyTimeout, "ready-timeout", cfg.ReadyTimeout, "bound on local-up's start and the cache's catch-up")
	fs.StringVar(&dataDir, "data-dir", "", "local-up data directories go here; a temporary one, removed afterwards, when empty")
	fs.BoolVar(&keep, "keep-data", false, "keep the temporary data directory")
	fs.StringVar(&out, "out", "docs/results/kep-2340.md", "markdown report; its JSON goes next to it")
	fs.StringArrayVar(&notes, "note", nil, "a note stored in the report (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if short {
		s := kepshape.ShortConfig()
		for name, set := range map[string]func(){"objects": func() { cfg.Objects = s.Objects }, "warmup": func() { cfg.Warmup = s.Warmup }, "window": func() { cfg.Window = s.Window }} {
			if !fs.Changed(name) {
				set()
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if !strings.HasSuffix(out, ".md") {
		return fmt.Errorf("kep-2340: --out must name a .md file, got %q", out)
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "freshcache-kep-2340-"); err != nil {
			return err
		}
		if keep {
			fmt.Fprintln(os.Stderr, "# data in", dataDir)
		} else {
			defer os.RemoveAll(dataDir)
		}
	}
	cfg.DataDir, cfg.Progress = dataDir, os.Stderr
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	rows, runErr := kepshape.Run(ctx, cfg)
	rep := kepshape.Report{Identity: report.NewIdentity("kep-2340"), Settings: cfg, Rows: rows}
	rep.Notes = notes
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	if len(rows) == 0 {
		return runErr
	}
	jerr := rep.WriteJSON(strings.TrimSuffix(out, ".md") + ".json")
	w, done, oerr := createOut(out)
	if oerr != nil {
		return errors.Join(runErr, jerr, oerr)
	}
	merr := kepshape.WriteMarkdown(w, rep)
	fmt.Println(kepshape.ComputeRatios(rows).Line())
	return errors.Join(runErr, jerr, merr, done())
}
