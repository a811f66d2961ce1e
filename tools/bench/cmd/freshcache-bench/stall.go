package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/tools/bench/stall"
)

// runStall stops etcd for a while under consistent LISTs of a large
// resource and compares what each configuration's apiserver and etcd do
// (kubernetes#138494; package stall).
func runStall(ctx context.Context, args []string) error {
	cfg, a, err := parseStall(args)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.EtcdCommand = []string{self, "etcd"}
	cfg.Progress = os.Stderr
	if err := cfg.Validate(); err != nil {
		return err
	}
	res, err := stall.Run(ctx, cfg)
	res.Command = strings.Join(os.Args, " ")
	res.Notes = a.notes
	if len(res.Configs) == 0 {
		return err
	}
	if werr := writeStall(a.outDir, a.name, res); werr != nil {
		err = errors.Join(err, werr)
	}
	if terr := stall.WriteTable(os.Stdout, res.Configs); terr != nil {
		err = errors.Join(err, terr)
	}
	fmt.Println()
	fmt.Println(res.ClosingLine)
	return err
}

// stallArgs are the stall subcommand's settings besides stall.Config.
type stallArgs struct {
	outDir, name string
	notes        []string
}

// parseStall reads the stall subcommand's command line.
func parseStall(args []string) (stall.Config, stallArgs, error) {
	var a stallArgs
	cfg, _, err := parseScenario("stall", args, stall.DefaultConfig(), stall.ShortConfig(), func(fs *pflag.FlagSet, cfg *stall.Config, short *bool) {
		fs.BoolVar(short, "short", false, "smoke run: 1,000 configmaps, 8 clients, 3 s warm-up, 10 s steady, a 5 s stall, 15 s after (flags given explicitly still win)")
		fs.StringVar(&cfg.BinDir, "bin-dir", cfg.BinDir, "directory with local-up and kube-apiserver (make build)")
		fs.StringSliceVar(&cfg.Configurations, "configs", cfg.Configurations, "configurations to run, in order: "+strings.Join(stall.AllConfigurations, ","))
		fs.IntVar(&cfg.Objects, "objects", cfg.Objects, "configmaps in the listed namespace")
		fs.IntVar(&cfg.ObjectBytes, "object-bytes", cfg.ObjectBytes, "bytes of data in each configmap")
		fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients listing the namespace with rv=\"\"")
		fs.Float64Var(&cfg.WritesPerSec, "writes-per-sec", cfg.WritesPerSec, "configmap updates per second, straight to etcd")
		fs.IntVar(&cfg.StallWrites, "stall-writes", cfg.StallWrites, "updates sent at once right after the SIGSTOP: they queue at the stopped etcd and land together at the SIGCONT (a backlog for the cache)")
		fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before the steady window")
		fs.DurationVar(&cfg.Steady, "steady", cfg.Steady, "steady window before the stall (the pre-stall level)")
		fs.DurationVar(&cfg.Stall, "stall", cfg.Stall, "how long etcd is stopped (SIGSTOP, then SIGCONT)")
		fs.DurationVar(&cfg.After, "after", cfg.After, "observation after the stall")
		fs.DurationVar(&cfg.SampleEvery, "sample-every", cfg.SampleEvery, "RSS sampling interval")
		fs.DurationVar(&cfg.ReadTimeout, "read-timeout", cfg.ReadTimeout, "client-side bound on one LIST")
		fs.DurationVar(&cfg.MaxRetryAfter, "max-retry-after", cfg.MaxRetryAfter, "cap on the pause a 429's Retry-After asks for")
		fs.StringVar(&cfg.DataDir, "data-dir", "", "etcd and local-up data go here (kept); a temporary directory, removed afterwards, when empty")
		fs.StringVar(&a.outDir, "out-dir", "docs/results", "directory for NAME.md and NAME.json; empty writes only the markdown to standard output")
		fs.StringVar(&a.name, "name", "stall", "file name prefix in --out-dir")
		fs.StringArrayVar(&a.notes, "note", nil, "a note stored in the report (repeatable)")
	})
	return cfg, a, err
}

func writeStall(outDir, name string, res stall.Result) error {
	if outDir == "" {
		return stall.WriteMarkdown(os.Stdout, res)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	return writeScenarioReport(filepath.Join(outDir, name+".md"), filepath.Join(outDir, name+".json"), res, stall.WriteMarkdown, stall.WriteJSON)
}
