package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/registry/generic"
	cachermetrics "k8s.io/apiserver/pkg/storage/cacher/metrics"

	fcmetrics "github.com/freshcache/watchcache/metrics"

	"github.com/freshcache/freshcache/lab/pkg/counters"
	"github.com/freshcache/freshcache/lab/test/robustness/checker"
	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Config is one robustness run.
type Config struct {
	// Variant names the run in reports ("upstream", "freshcache", ...).
	Variant string
	// NewAPIs starts the two "apiservers", API i pinned to member i.
	NewAPIs func(ctx context.Context, cl *Cluster) ([]API, error)
	Traffic Traffic
	// Watchers is the number of informer-like watchers (half of them
	// select one node).
	Watchers int
	// Seed drives every random choice of the run (not the scheduler).
	Seed uint64
	// MinOps and MinDuration: traffic runs until both are reached and at
	// least one round of faults (every kind) is done. Further rounds run
	// while MinDuration has not passed.
	MinOps      int
	MinDuration time.Duration
	// Hold is how long a lasting fault (kill, isolation, delay, drop) lasts.
	Hold time.Duration
	// RV0Consistent: rv=0 reads promise freshness and are checked as
	// consistent reads.
	RV0Consistent bool
	// RV0Staleness is the staleness bound of those rv=0 reads
	// (record.Run.RV0Staleness); zero: strict.
	RV0Staleness time.Duration
	// ContiguousTruth: only the clients write to etcd (in-process caches).
	ContiguousTruth bool
	// DataDir holds etcd's data.
	DataDir string
	// Logf reports progress.
	Logf func(format string, args ...any)
	// OnStall receives the watchdog's report when a step of the run (a
	// client op, a watch session, a fault, a harness step) outlives its
	// own deadline by StallGrace: the run is hung. It is called once,
	// from the watchdog's goroutine, while the run is still stuck, so it
	// must end the process (panic) or arrange for the run to end. Default:
	// print the report to stderr and panic.
	OnStall func(report string)
	// StallGrace is how long a step may outlive its own deadline before
	// the watchdog calls it hung. Default 30s.
	StallGrace time.Duration
}

// Result is a finished run.
type Result struct {
	Run     *record.Run
	Report  *checker.Report
	Summary Summary
}

// Execute runs cfg: cluster, caches, traffic, faults, then the checkers.
// An error means the harness itself failed (the run proves nothing).
func Execute(ctx context.Context, cfg Config) (*Result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	began := time.Now()
	onStall := cfg.OnStall
	if onStall == nil {
		onStall = func(report string) {
			fmt.Fprint(os.Stderr, report)
			panic(fmt.Sprintf("robustness: %s: the run is hung (seed %d); report above", cfg.Variant, cfg.Seed))
		}
	}
	grace := cfg.StallGrace
	if grace == 0 {
		grace = stallGrace
	}
	wd := newWatchdog(onStall, grace)
	wdCtx, stopWatchdog := context.WithCancel(context.Background())
	defer stopWatchdog()
	go wd.run(wdCtx, time.Second)
	cachermetrics.Register()
	fcmetrics.Register()
	metricsBefore := gatherMetrics()
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))

	cl, err := StartCluster(ctx, cfg.DataDir, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	defer cl.Close()
	truthCtx, stopTruth := context.WithCancel(ctx)
	defer stopTruth()
	truth := StartTruth(truthCtx, cl.Admin())

	endStart := wd.begin("start the apiservers", faultTimeout)
	caches, err := cfg.NewAPIs(ctx, cl)
	if err != nil {
		endStart()
		return nil, fmt.Errorf("start apiservers: %w", err)
	}
	defer func() {
		for _, c := range caches {
			end := wd.begin(fmt.Sprintf("stop apiserver %d", c.Index()), 0)
			c.Stop()
			end()
		}
	}()
	rctx, cancel := context.WithTimeout(ctx, faultTimeout)
	for _, c := range caches {
		if err := c.WaitReady(rctx); err != nil {
			cancel()
			endStart()
			return nil, err
		}
	}
	cancel()
	endStart()
	logf("%s: etcd (3 members) and 2 apiservers ready; seed %d", cfg.Variant, cfg.Seed)

	rec := NewRecorder()
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	raw := &rawEtcd{cl: cl, truth: truth, ledger: &ledger{}}
	var wg sync.WaitGroup
	for i := range cfg.Traffic.Clients {
		cli := newClient(i+1, cfg.Seed, caches, rec, wd, cfg.Traffic)
		cli.etcd = raw
		wg.Go(func() { cli.run(trafficCtx) })
	}
	listMode := record.Consistent
	if cfg.Traffic.ZeroReads {
		listMode = record.Zero
	}
	for i := range cfg.Watchers {
		w := &watcher{actor: actor{id: 100 + i, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(100+i))), caches: caches, cur: i % len(caches), rec: rec, wd: wd, tr: cfg.Traffic}, listMode: listMode}
		if i%2 == 1 {
			w.node = nodeName(i % cfg.Traffic.Nodes)
		}
		wg.Go(func() { w.run(trafficCtx) })
	}

	probeMode := record.Consistent
	if cfg.Traffic.ZeroReads {
		probeMode = record.Zero
	}
	in := &injector{cl: cl, caches: caches, rec: rec, wd: wd, truth: truth, rng: rng, tr: cfg.Traffic, hold: cfg.Hold, probeMode: probeMode}
	pause(ctx, 2*time.Second) // warm-up: let traffic build some state
	for round := 0; ; round++ {
		kinds := append([]string(nil), FaultKinds...)
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		for _, k := range kinds {
			if ctx.Err() != nil {
				break
			}
			if err := in.inject(ctx, k); err != nil {
				return nil, fmt.Errorf("%s: the cluster did not recover: %w", cfg.Variant, err)
			}
			f := rec.Faults()
			logf("%s: fault %s (%s) done after %d ops %s", cfg.Variant, k, f[len(f)-1].Detail, rec.OpCount(), f[len(f)-1].Err)
			pause(ctx, time.Duration(500+rng.IntN(1000))*time.Millisecond)
		}
		if time.Since(began) >= cfg.MinDuration || ctx.Err() != nil {
			break
		}
	}
	// Keep traffic running until enough ops ran and MinDuration passed.
	tick := time.NewTicker(200 * time.Millisecond)
	for (rec.OpCount() < cfg.MinOps || time.Since(began) < cfg.MinDuration) && ctx.Err() == nil {
		<-tick.C
	}
	tick.Stop()
	cl.HealPeers()
	for i := range Members {
		cl.ClientProxy(i).Heal()
	}
	hctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Healing, the last reads and the metrics share hctx.
	endFinal := wd.begin("heal, final reads and metrics", 60*time.Second)
	defer endFinal()
	if err := cl.WaitHealthy(hctx); err != nil {
		return nil, err
	}
	stopTraffic()
	wg.Wait()
	logf("%s: traffic stopped after %d ops", cfg.Variant, rec.OpCount())
	// Every lease is gone and its deletion recorded, or the history would
	// miss changes etcd makes after this.
	if err := raw.ledger.err(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Variant, err)
	}

	// The final state: etcd's revision now, the truth complete up to it,
	// and each cache read at that revision.
	resp, err := cl.Admin().Get(hctx, "final")
	if err != nil {
		return nil, fmt.Errorf("final revision: %w", err)
	}
	finalRev := resp.Header.Revision
	if err := truth.WaitFor(hctx, finalRev); err != nil {
		return nil, err
	}
	raw.ledger.settle(raw, rec)
	for _, c := range caches {
		if err := c.WaitReady(hctx); err != nil {
			return nil, err
		}
		for _, mode := range []record.ReadMode{record.NotOlder, record.Consistent} {
			// A cache still catching up after the last fault answers with a
			// retryable error (TooLargeResourceVersion, 429) and Retry-After;
			// every attempt is recorded and checked, and the harness only
			// gives up when hctx does.
			for {
				op := record.Op{Client: 700 + c.Index(), Cache: c.Index(), Kind: record.List, Mode: mode, MinRV: finalRev}
				op.Call = rec.Now()
				err := c.Do(hctx, &op)
				op.Return = rec.Now()
				classify(&op, err)
				rec.AddOp(op)
				if err == nil {
					break
				}
				delay, retryable := apierrors.SuggestsClientDelay(err)
				if !retryable {
					return nil, fmt.Errorf("final %s list on cache %d: %w", mode, c.Index(), err)
				}
				retry := time.NewTimer(time.Duration(max(delay, 1)) * time.Second)
				select {
				case <-hctx.Done():
					retry.Stop()
					return nil, fmt.Errorf("final %s list on cache %d: %w (then %w)", mode, c.Index(), err, hctx.Err())
				case <-retry.C:
				}
			}
		}
	}
	metricsAfter := gatherMetrics()
	for _, c := range caches {
		if m, ok := c.(interface {
			Metrics(context.Context) map[string]float64
		}); ok {
			for k, v := range m.Metrics(hctx) {
				metricsAfter[fmt.Sprintf("apiserver-%d:%s", c.Index(), k)] += v
			}
		}
	}
	endFinal()
	stopTruth()
	events, terr := truth.Events()
	if terr != nil {
		return nil, terr
	}

	run := &record.Run{Seed: cfg.Seed, Variant: cfg.Variant, Truth: events, FinalRev: finalRev, RV0Consistent: cfg.RV0Consistent, RV0Staleness: int64(cfg.RV0Staleness), ContiguousTruth: cfg.ContiguousTruth}
	rec.Snapshot(run)
	keys := map[string]bool{}
	for _, k := range cfg.Traffic.keyNames() {
		keys[k] = true
	}
	for _, e := range events {
		keys[e.Name] = true
	}
	for k := range keys {
		run.Keys = append(run.Keys, k)
	}
	sort.Strings(run.Keys)
	logf("%s: checking %d ops, %d watch sessions, %d etcd events", cfg.Variant, len(run.Ops), len(run.Sessions), len(run.Truth))
	report := checker.Check(run, checker.Options{})
	res := &Result{Run: run, Report: report}
	res.Summary = summarize(run, report, time.Since(began), counters.Delta(metricsBefore, metricsAfter))
	return res, nil
}

// StorageAPIs returns a Config.NewAPIs that builds two in-process caches
// with dec, cache i pinned to member i through its client proxy.
func StorageAPIs(dec generic.StorageDecorator) func(context.Context, *Cluster) ([]API, error) {
	return func(_ context.Context, cl *Cluster) ([]API, error) {
		var out []API
		for i := range 2 {
			c, err := NewCache(i, i, cl.ProxiedClientURL(i), dec)
			if err != nil {
				for _, o := range out {
					o.Stop()
				}
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
}
