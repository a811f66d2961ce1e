package watchlist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// Run measures every configuration in turn, each on a fresh cluster, and
// returns what it measured. A configuration that fails keeps the phases
// it finished, says why in its Error, and the next one still runs; the
// returned error joins those failures (or is ctx's).
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	res := Result{Date: time.Now().UTC(), GitCommit: report.GitCommit(), Machine: report.ThisMachine(), Config: cfg}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	root := cfg.DataDir
	if root == "" {
		dir, err := os.MkdirTemp("", "freshcache-watchlist-")
		if err != nil {
			return res, err
		}
		root = dir
	}
	var errs []error
	for i, name := range cfg.Configs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		run, err := runConfig(ctx, cfg, name, filepath.Join(root, fmt.Sprintf("%d-%s", i, name)))
		if err != nil {
			run.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			fmt.Fprintf(cfg.Progress, "# %s failed: %v\n", name, err)
		}
		res.Runs = append(res.Runs, run)
	}
	res.Ratios = ComputeRatios(res.Runs)
	err := errors.Join(errs...)
	if cfg.DataDir == "" {
		if err == nil {
			_ = os.RemoveAll(root)
		} else {
			fmt.Fprintln(cfg.Progress, "# local-up data and logs kept in", root)
		}
	}
	return res, err
}

// runConfig is one configuration from local-up's start to its stop.
func runConfig(ctx context.Context, cfg Config, name, dataDir string) (ConfigRun, error) {
	run := ConfigRun{Config: name, Args: localUpArgs(name)}
	say := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "# %s %s: %s\n", time.Now().Format("15:04:05"), name, fmt.Sprintf(format, args...))
	}
	say("starting local-up %v", append(localUpArgs(name), cfg.LocalUpArgs...))
	c, err := startCluster(ctx, cfg, name, dataDir)
	if err != nil {
		return run, err
	}
	defer c.stop()
	if err := c.createNamespaces(ctx); err != nil {
		return run, err
	}
	t0 := time.Now()
	if err := c.store.load(ctx); err != nil {
		return run, err
	}
	run.LoadSeconds = time.Since(t0).Seconds()
	t1 := time.Now()
	if err := c.waitSynced(ctx); err != nil {
		return run, err
	}
	run.SyncSeconds = time.Since(t1).Seconds()
	run.Objects = c.store.configMaps()
	say("%d configmaps and %d secrets written to etcd in %.1fs; the cache listed them %.1fs later", run.Objects, cfg.SmallObjects, run.LoadSeconds, run.SyncSeconds)

	readClients, err := newReadClients(c.rest, cfg.ReadClients)
	if err != nil {
		return run, err
	}
	wlClients, err := newWatchListClients(c.rest, cfg.WatchLists)
	if err != nil {
		return run, err
	}
	rssCtx, stopRSS := context.WithCancel(ctx)
	defer stopRSS()
	go c.probe.watchRSS(rssCtx)
	w := c.store.startWriters(ctx)
	defer w.stop()

	phases := []struct {
		name         string
		d            time.Duration
		reads, lists bool
		unreported   bool
	}{
		{name: PhaseIdle, d: cfg.Idle},
		{name: "warm-up", d: cfg.Warmup, reads: true, unreported: true},
		{name: PhaseBaseline, d: cfg.Baseline, reads: true},
		{name: PhaseContended, d: cfg.Contended, reads: true, lists: true},
		{name: PhaseAlone, d: cfg.Alone, lists: true},
	}
	for _, ph := range phases {
		var rc []readClient
		if ph.reads {
			rc = readClients
		}
		var wc []watchListClient
		if ph.lists {
			wc = wlClients
		}
		p, err := c.phase(ctx, ph.name, ph.d, rc, wc, w)
		if err != nil {
			return run, err
		}
		if !ph.unreported {
			run.Phases = append(run.Phases, p)
		}
		say("%s: %s", ph.name, phaseLine(p))
	}
	return run, nil
}

// phase runs readers and WatchList loops (either may be empty) for d
// under the background writers, and measures it. The server's /metrics
// are scraped outside the CPU window, so that the scrapes' cost is left
// out of it.
func (c *cluster) phase(ctx context.Context, name string, d time.Duration, rc []readClient, wc []watchListClient, w *writers) (PhaseResult, error) {
	p := PhaseResult{Name: name, Seconds: d.Seconds()}
	before, berr := c.scraper.scrape(ctx)
	c.probe.takePeak()
	cpu0 := c.probe.sample()
	w0, e0 := w.counts()

	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		wg      sync.WaitGroup
		tallies map[string]*readTally
		wl      *watchListTally
	)
	if len(rc) > 0 {
		wg.Go(func() { tallies = newReaders(c.cfg.SmallObjects).run(pctx, rc) })
	}
	if len(wc) > 0 {
		wg.Go(func() { wl = runWatchLists(pctx, wc, c.cfg.WatchListTimeout) })
	}
	<-pctx.Done()
	cpu1 := c.probe.sample()
	w1, e1 := w.counts()
	p.CPU = cpuStats(cpu0, cpu1)
	p.CPU.APIServerPeakRSSMiB = c.probe.takePeak()
	p.Seconds = cpu1.at.Sub(cpu0.at).Seconds()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return p, err
	}
	p.Writes, p.WriteErrors = w1-w0, e1-e0
	if tallies != nil {
		p.Reads = readStats(tallies, p.Seconds)
	}
	if wl != nil {
		p.WatchList = watchListStats(wl)
	}
	after, aerr := c.scraper.scrape(ctx)
	switch {
	case berr != nil:
		p.MetricsError = berr.Error()
	case aerr != nil:
		p.MetricsError = aerr.Error()
	default:
		p.Waits = waitStats(before, after)
		p.Runtime = runtimeStats(before, after, p.Seconds)
	}
	return p, nil
}

// phaseLine is a phase's progress line.
func phaseLine(p PhaseResult) string {
	s := fmt.Sprintf("%.0fs apiserver=%.2f etcd=%.2f bench=%.2f other=%.2f cores, rss<=%.0fMiB", p.Seconds, p.CPU.APIServer, p.CPU.Etcd, p.CPU.Bench, p.CPU.Other, p.CPU.APIServerPeakRSSMiB)
	for _, r := range p.Reads {
		s += fmt.Sprintf("; %s %.0f/s p99=%.1fms err=%d", r.Kind, r.OpsPerSec, r.P99Ms, r.Errors)
	}
	if wl := p.WatchList; wl.Completed+wl.Errors+wl.Cancelled > 0 {
		s += fmt.Sprintf("; watchlists done=%d p50=%.0fms err=%d events=%d", wl.Completed, wl.P50Ms, wl.Errors, wl.Events)
	}
	return s
}
