package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/freshcache/freshcache/tools/bench/cluster"
	"github.com/freshcache/freshcache/tools/bench/watchlist"
)

// runWatchList is the "WatchList over a huge resource" scenario
// (kubernetes#138728). It writes the markdown and, next to it, the JSON,
// and ends with the ratios line on stdout.
func runWatchList(ctx context.Context, args []string) error {
	cfg, a, err := parseWatchList(args)
	if err != nil {
		return err
	}
	if a.from != "" {
		return renderWatchList(a.from, a.out, a.notes)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := checkBinDir(cfg.BinDir); err != nil {
		return err
	}
	if a.out == "" || !strings.HasSuffix(a.out, ".md") {
		return fmt.Errorf("watchlist: --out must name a .md file, got %q", a.out)
	}
	if err := os.MkdirAll(filepath.Dir(a.out), 0o755); err != nil {
		return err
	}
	if !a.verbose {
		// client-go logs every read cut by the end of a phase at error
		// level, which klog sends to stderr whatever its output; a
		// logger of its own takes all of klog's output.
		klog.SetLogger(logr.Discard())
	}
	cfg.Progress = os.Stderr

	res, runErr := watchlist.Run(ctx, cfg)
	res.Command = "freshcache-bench watchlist " + strings.Join(args, " ")
	res.Notes = append(res.Notes, a.notes...)
	if a.short {
		res.Notes = append(res.Notes, "short mode (--short): the numbers check the harness, not the caches")
	}
	if len(res.Runs) == 0 {
		return runErr
	}
	if err := writeWatchList(res, a.out); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Println(watchlist.RatiosLine(res.Ratios))
	return runErr
}

// watchListArgs are the watchlist subcommand's settings besides
// watchlist.Config.
type watchListArgs struct {
	out, from      string
	short, verbose bool
	notes          []string
}

// parseWatchList reads the watchlist subcommand's command line.
func parseWatchList(args []string) (watchlist.Config, watchListArgs, error) {
	var a watchListArgs
	cfg, short, err := parseScenario("watchlist", args, watchlist.DefaultConfig(), watchlist.ShortConfig(), func(fs *pflag.FlagSet, cfg *watchlist.Config, short *bool) {
		fs.StringVar(&cfg.BinDir, "bin-dir", "_output/bin", "directory with local-up and kube-apiserver (make build)")
		fs.StringSliceVar(&cfg.Configs, "configs", cfg.Configs, "configurations, each on a fresh cluster: "+strings.Join(cluster.AllConfigs, ", "))
		fs.IntVar(&cfg.Objects, "objects", cfg.Objects, "configmaps of the huge resource")
		fs.IntVar(&cfg.HugeNamespaces, "huge-namespaces", cfg.HugeNamespaces, "namespaces the huge resource is spread over")
		fs.IntVar(&cfg.SmallObjects, "small-objects", cfg.SmallObjects, "configmaps and secrets in the small namespace the reads target")
		fs.IntVar(&cfg.ValueBytes, "value-bytes", cfg.ValueBytes, "size of each object's data value")
		fs.IntVar(&cfg.LoadWriters, "load-writers", cfg.LoadWriters, "concurrent etcd Puts while loading")
		fs.IntVar(&cfg.ReadClients, "read-clients", cfg.ReadClients, "closed-loop clients per read kind")
		fs.IntVar(&cfg.WatchLists, "watchlists", cfg.WatchLists, "concurrent WatchList loops")
		fs.Float64Var(&cfg.WriteRate, "write-rate", cfg.WriteRate, "updates per second to each resource, straight to etcd, in every phase")
		fs.DurationVar(&cfg.Idle, "idle", cfg.Idle, "writes-only phase (the apiserver's idle CPU)")
		fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unreported reads before phase A")
		fs.DurationVar(&cfg.Baseline, "baseline", cfg.Baseline, "phase A: fresh reads")
		fs.DurationVar(&cfg.Contended, "contended", cfg.Contended, "phase B: fresh reads and WatchLists")
		fs.DurationVar(&cfg.Alone, "alone", cfg.Alone, "phase C: WatchLists only (their CPU per event)")
		fs.DurationVar(&cfg.WatchListTimeout, "watchlist-timeout", cfg.WatchListTimeout, "bound on one WatchList")
		fs.DurationVar(&cfg.ReadyTimeout, "ready-timeout", cfg.ReadyTimeout, "bound on local-up's start and on the cache listing every loaded object")
		fs.StringArrayVar(&cfg.LocalUpArgs, "local-up-arg", nil, "a flag passed to every local-up after the configuration's own (repeatable)")
		fs.StringVar(&cfg.DataDir, "data-dir", "", "local-up data directories go here; a temporary one, removed unless a configuration failed, when empty")
		fs.BoolVar(short, "short", false, "smoke run: "+watchListShortSummary()+" (flags given explicitly still win)")
		fs.StringVar(&a.out, "out", "docs/results/watchlist.md", "markdown report; the JSON goes next to it (NAME.json)")
		fs.StringArrayVar(&a.notes, "note", nil, "a note stored in the report (repeatable)")
		fs.StringVar(&a.from, "from-json", "", "run nothing: render the report (and its JSON) at --out again from this JSON")
		fs.BoolVarP(&a.verbose, "verbose", "v", false, "show klog output")
	})
	a.short = short
	return cfg, a, err
}

// renderWatchList writes the report of an earlier run again, from its JSON,
// with any --note added.
func renderWatchList(from, out string, notes []string) error {
	if out == "" || !strings.HasSuffix(out, ".md") {
		return fmt.Errorf("watchlist: --out must name a .md file, got %q", out)
	}
	res, err := watchlist.ReadResult(from)
	if err != nil {
		return err
	}
	res.Notes = append(res.Notes, notes...)
	if err := writeWatchList(res, out); err != nil {
		return err
	}
	fmt.Println(watchlist.RatiosLine(res.Ratios))
	return nil
}

func writeWatchList(res watchlist.Result, out string) error {
	return writeScenarioReport(out, strings.TrimSuffix(out, ".md")+".json", res, watchlist.WriteMarkdown,
		func(path string, res watchlist.Result) error { return res.WriteJSON(path) })
}

func watchListShortSummary() string {
	s := watchlist.ShortConfig()
	return fmt.Sprintf("%d objects, %d WatchLists, phases A %v, B %v, C %v", s.Objects, s.WatchLists, s.Baseline, s.Contended, s.Alone)
}

// checkBinDir says early, and clearly, when make build has not run.
func checkBinDir(dir string) error {
	for _, name := range []string{"local-up", "kube-apiserver"} {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("watchlist: --bin-dir=%s: %v (run make build)", dir, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("watchlist: --bin-dir=%s: %s is not an executable", dir, p)
		}
	}
	return nil
}
