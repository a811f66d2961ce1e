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
	fs := pflag.NewFlagSet("stall", pflag.ContinueOnError)
	def := stall.DefaultConfig()
	cfg := def
	var (
		short   bool
		outDir  string
		name    string
		notes   []string
		configs []string
	)
	fs.BoolVar(&short, "short", false, "smoke run: 1,000 configmaps, 8 clients, 3 s warm-up, 10 s steady, a 5 s stall, 15 s after (flags given explicitly still win)")
	fs.StringVar(&cfg.BinDir, "bin-dir", def.BinDir, "directory with local-up and kube-apiserver (make build)")
	fs.StringSliceVar(&configs, "configs", def.Configurations, "configurations to run, in order: "+strings.Join(stall.AllConfigurations, ","))
	fs.IntVar(&cfg.Objects, "objects", def.Objects, "configmaps in the listed namespace")
	fs.IntVar(&cfg.ObjectBytes, "object-bytes", def.ObjectBytes, "bytes of data in each configmap")
	fs.IntVar(&cfg.Clients, "clients", def.Clients, "concurrent clients listing the namespace with rv=\"\"")
	fs.Float64Var(&cfg.WritesPerSec, "writes-per-sec", def.WritesPerSec, "configmap updates per second, straight to etcd")
	fs.IntVar(&cfg.StallWrites, "stall-writes", def.StallWrites, "updates sent at once right after the SIGSTOP: they queue at the stopped etcd and land together at the SIGCONT (a backlog for the cache)")
	fs.DurationVar(&cfg.Warmup, "warmup", def.Warmup, "load before the steady window")
	fs.DurationVar(&cfg.Steady, "steady", def.Steady, "steady window before the stall (the pre-stall level)")
	fs.DurationVar(&cfg.Stall, "stall", def.Stall, "how long etcd is stopped (SIGSTOP, then SIGCONT)")
	fs.DurationVar(&cfg.After, "after", def.After, "observation after the stall")
	fs.DurationVar(&cfg.SampleEvery, "sample-every", def.SampleEvery, "RSS sampling interval")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", def.ReadTimeout, "client-side bound on one LIST")
	fs.DurationVar(&cfg.MaxRetryAfter, "max-retry-after", def.MaxRetryAfter, "cap on the pause a 429's Retry-After asks for")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "etcd and local-up data go here (kept); a temporary directory, removed afterwards, when empty")
	fs.StringVar(&outDir, "out-dir", "docs/results", "directory for NAME.md and NAME.json; empty writes only the markdown to standard output")
	fs.StringVar(&name, "name", "stall", "file name prefix in --out-dir")
	fs.StringArrayVar(&notes, "note", nil, "a note stored in the report (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("stall: unexpected arguments %q", fs.Args())
	}
	cfg.Configurations = configs
	if short {
		cfg = applyStallShort(fs, cfg)
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
	res.Notes = notes
	if len(res.Configs) == 0 {
		return err
	}
	if werr := writeStall(outDir, name, res); werr != nil {
		err = errors.Join(err, werr)
	}
	if terr := stall.WriteTable(os.Stdout, res.Configs); terr != nil {
		err = errors.Join(err, terr)
	}
	fmt.Println()
	fmt.Println(res.ClosingLine)
	return err
}

// applyStallShort takes ShortConfig's values for every flag not given.
func applyStallShort(fs *pflag.FlagSet, cfg stall.Config) stall.Config {
	s := stall.ShortConfig()
	set := func(flag string, apply func()) {
		if !fs.Changed(flag) {
			apply()
		}
	}
	set("objects", func() { cfg.Objects = s.Objects })
	set("clients", func() { cfg.Clients = s.Clients })
	set("warmup", func() { cfg.Warmup = s.Warmup })
	set("steady", func() { cfg.Steady = s.Steady })
	set("stall", func() { cfg.Stall = s.Stall })
	set("after", func() { cfg.After = s.After })
	return cfg
}

func writeStall(outDir, name string, res stall.Result) error {
	if outDir == "" {
		return stall.WriteMarkdown(os.Stdout, res)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	md := filepath.Join(outDir, name+".md")
	f, err := os.Create(md)
	if err != nil {
		return err
	}
	err = stall.WriteMarkdown(f, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	js := filepath.Join(outDir, name+".json")
	if err := stall.WriteJSON(js, res); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "# wrote", md, js)
	return nil
}
