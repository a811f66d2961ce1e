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
	cfg, a, err := parseKEP2340(args)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	out, dataDir := a.out, a.dataDir
	if !strings.HasSuffix(out, ".md") {
		return fmt.Errorf("kep-2340: --out must name a .md file, got %q", out)
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "freshcache-kep-2340-"); err != nil {
			return err
		}
		if a.keep {
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
	rep.Notes = a.notes
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

// kepArgs are the kep-2340 subcommand's settings besides kepshape.Config.
type kepArgs struct {
	out, dataDir string
	keep         bool
	notes        []string
}

// parseKEP2340 reads the kep-2340 subcommand's command line.
func parseKEP2340(args []string) (kepshape.Config, kepArgs, error) {
	var a kepArgs
	cfg, _, err := parseScenario("kep-2340", args, kepshape.DefaultConfig(), kepshape.ShortConfig(), func(fs *pflag.FlagSet, cfg *kepshape.Config, short *bool) {
		fs.BoolVar(short, "short", false, "the harness check: 10,000 objects, a 30 s window (other flags still apply on top)")
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
		fs.StringVar(&a.dataDir, "data-dir", "", "local-up data directories go here; a temporary one, removed afterwards, when empty")
		fs.BoolVar(&a.keep, "keep-data", false, "keep the temporary data directory")
		fs.StringVar(&a.out, "out", "docs/results/kep-2340.md", "markdown report; its JSON goes next to it")
		fs.StringArrayVar(&a.notes, "note", nil, "a note stored in the report (repeatable)")
	})
	return cfg, a, err
}
