package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Config is one storage-level run.
type Config struct {
	Shape     Shape    `json:"shape"`
	Backends  []string `json:"backends"`
	Scenarios []string `json:"scenarios"`
	// EtcdScenarios, when set, replaces Scenarios for the etcd backend:
	// at large shapes every etcd LIST decodes every pod, and a full
	// matrix of them takes far longer than the cached backends' rows.
	EtcdScenarios []string      `json:"etcd_scenarios,omitempty"`
	RVs           []string      `json:"rvs"`
	Concurrency   []int         `json:"concurrency"`
	Duration      time.Duration `json:"duration_ns"`
	Warmup        time.Duration `json:"warmup_ns"`
	// Prime is unmeasured load on each backend before its first row: every
	// rv mode of the first closed-loop scenario at the highest concurrency,
	// so that no row pays for heap growth and cold caches that the rows
	// after it do not (the first row measured was seen 20-40% slower).
	Prime time.Duration `json:"prime_ns"`
	// Load runs during every row (the fan-out rows aim the pod writes at
	// the watched nodes, at WatchWritesPerSec).
	Load Load `json:"load"`

	// WatchNodes is K: the fan-out puts c watchers on each of K nodes.
	WatchNodes        int           `json:"watch_nodes"`
	WatchWritesPerSec float64       `json:"watch_writes_per_sec"`
	WatchSetupTimeout time.Duration `json:"watch_setup_timeout_ns"`

	// SweepLeaseRates, when set, adds rows of ScenarioListNode at rv="" and
	// SweepConcurrency for each lease write rate: freshness wait against
	// the write rate of another resource.
	SweepLeaseRates  []float64 `json:"sweep_lease_rates,omitempty"`
	SweepConcurrency int       `json:"sweep_concurrency,omitempty"`

	// GateControl, when set, adds a control row per period for every cache
	// backend: ScenarioListNode at rv=0 and the highest concurrency, where
	// each op first waits for a shared gate that opens once per period. It
	// involves no etcd and no freshness protocol: it measures what a wait
	// of that length costs a closed loop on this machine, to compare with
	// the consistent rows' freshness wait. The rows run right after the
	// LIST-by-node rows (or last, without that scenario).
	GateControl []time.Duration `json:"gate_control_ns,omitempty"`

	// OracleClient is how freshcache's revision oracle reaches etcd:
	// OracleGRPC (the default, as in kube-apiserver) or OracleInProcess,
	// etcd's in-process client on the embedded server, which leaves the
	// gRPC transport out of every fetch. A diagnostic: it separates what
	// the fetch's transport costs on these cores from what the protocol
	// costs. Only with an embedded etcd.
	OracleClient string `json:"oracle_client,omitempty"`

	// TraceDir, when set, receives an execution trace (runtime/trace) of
	// the measured part of every closed-loop row, named
	// BACKEND-SCENARIO-RV-cCLIENTS-N.trace (rv "" as "consistent", N counts
	// repeats from 1). freshcache-bench trace-wait reads them. Tracing costs
	// CPU: traced rows are slower than untraced ones.
	TraceDir string `json:"-"`

	// CPUProfileDir, when set, receives a CPU profile (runtime/pprof) of
	// the measured part of every closed-loop row, named like the traces
	// with the extension .pprof, and each such row gets Row.CPUSplitUsPerOp
	// (package cpusplit). Profiling costs a little CPU (a signal every
	// 10 ms per thread).
	CPUProfileDir string `json:"-"`

	// ReadyTimeout bounds the wait for a cache's initial list.
	ReadyTimeout time.Duration `json:"-"`
	// Progress receives one line per row; nil discards.
	Progress io.Writer `json:"-"`
}

// WithDefaults fills zero fields with the defaults of `freshcache-bench storage`.
func (c Config) WithDefaults() Config {
	c.Shape = c.Shape.WithDefaults()
	if len(c.Backends) == 0 {
		c.Backends = AllBackends
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = AllScenarios
	}
	if len(c.RVs) == 0 {
		c.RVs = allRVs
	}
	if len(c.Concurrency) == 0 {
		c.Concurrency = []int{1, 4, 32}
	}
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.WatchNodes <= 0 {
		c.WatchNodes = 10
	}
	c.WatchNodes = min(c.WatchNodes, c.Shape.Nodes)
	if c.WatchWritesPerSec <= 0 {
		c.WatchWritesPerSec = 100
	}
	if c.WatchSetupTimeout <= 0 {
		c.WatchSetupTimeout = time.Minute
	}
	if c.SweepConcurrency <= 0 {
		c.SweepConcurrency = 4
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 5 * time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// Run measures every backend of cfg on env, one backend at a time, and
// returns the rows in order.
func Run(ctx context.Context, env *Env, cfg Config) ([]Row, error) {
	cfg = cfg.WithDefaults()
	var rows []Row
	for _, name := range cfg.Backends {
		start := time.Now()
		b, err := env.newPodBackend(ctx, name, cfg.ReadyTimeout, cfg.OracleClient)
		if err != nil {
			return rows, err
		}
		fmt.Fprintf(cfg.Progress, "# %s ready in %v\n", name, time.Since(start).Round(time.Millisecond))
		br, err := env.runBackend(ctx, b, cfg)
		rows = append(rows, br...)
		b.destroy()
		runtime.GC()
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

func (e *Env) runBackend(ctx context.Context, b *podBackend, cfg Config) ([]Row, error) {
	var rows []Row
	emit := func(r Row) {
		if b.name == BackendFreshcache && cfg.OracleClient == OracleInProcess {
			r.OracleClient = OracleInProcess
		}
		rows = append(rows, r)
		fmt.Fprintln(cfg.Progress, formatRow(r))
	}
	scenarios := cfg.Scenarios
	if b.name == BackendEtcd && len(cfg.EtcdScenarios) > 0 {
		scenarios = cfg.EtcdScenarios
	}
	e.prime(ctx, b, cfg, scenarios)
	gated := false
	for _, sc := range scenarios {
		for _, rv := range cfg.RVs {
			for _, c := range cfg.Concurrency {
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				var r Row
				var err error
				if sc == ScenarioWatchFan {
					r, err = e.runFanout(ctx, b, cfg, rv, c)
				} else {
					r, err = e.runClosedLoop(ctx, b, cfg, sc, rv, c, cfg.Load)
				}
				if err != nil {
					return rows, err
				}
				emit(r)
			}
		}
		// The gate control runs right after the LIST-by-node rows it is
		// compared with: rows later in a process (after 20k-item LISTs
		// grew the heap) were seen 30% slower for the same op.
		if sc == ScenarioListNode {
			if err := e.runGateControl(ctx, b, cfg, emit); err != nil {
				return rows, err
			}
			gated = true
		}
	}
	if !gated {
		if err := e.runGateControl(ctx, b, cfg, emit); err != nil {
			return rows, err
		}
	}
	for _, lr := range cfg.SweepLeaseRates {
		load := cfg.Load
		load.LeaseWritesPerSec = lr
		r, err := e.runClosedLoop(ctx, b, cfg, ScenarioListNode, RVConsistent, cfg.SweepConcurrency, load)
		if err != nil {
			return rows, err
		}
		r.Sweep = true
		emit(r)
	}
	return rows, nil
}

// runGateControl emits the Config.GateControl rows (cache backends only).
func (e *Env) runGateControl(ctx context.Context, b *podBackend, cfg Config, emit func(Row)) error {
	if b.name == BackendEtcd || len(cfg.Concurrency) == 0 {
		return nil
	}
	for _, period := range cfg.GateControl {
		r, err := e.runGated(ctx, b, cfg, slices.Max(cfg.Concurrency), period)
		if err != nil {
			return err
		}
		emit(r)
	}
	return nil
}

// prime runs unmeasured load before a backend's first row (Config.Prime).
func (e *Env) prime(ctx context.Context, b *podBackend, cfg Config, scenarios []string) {
	if cfg.Prime <= 0 || len(cfg.RVs) == 0 || len(cfg.Concurrency) == 0 {
		return
	}
	for _, sc := range scenarios {
		if sc == ScenarioWatchFan {
			continue
		}
		c := slices.Max(cfg.Concurrency)
		per := cfg.Prime / time.Duration(len(cfg.RVs))
		for _, rv := range cfg.RVs {
			e.workers(ctx, b, sc, rv, c, time.Now().Add(per), nil)
		}
		return
	}
}

// runClosedLoop runs c workers, each issuing the scenario's op back to back
// for cfg.Duration (after cfg.Warmup), under load. Ops still in flight at
// the deadline finish and count; the row's time includes them.
func (e *Env) runClosedLoop(ctx context.Context, b *podBackend, cfg Config, sc, rv string, c int, load Load) (Row, error) {
	return e.runLoop(ctx, b, cfg, sc, rv, c, load, nil)
}

// runLoop is runClosedLoop with an optional gate before every op.
func (e *Env) runLoop(ctx context.Context, b *podBackend, cfg Config, sc, rv string, c int, load Load, g *gate) (Row, error) {
	row := Row{Backend: b.name, Scenario: sc, RV: rv, Concurrency: c, Load: load}
	w := e.StartLoad(ctx, load)
	if cfg.Warmup > 0 {
		e.workers(ctx, b, sc, rv, c, time.Now().Add(cfg.Warmup), g)
	}
	stopTrace, err := startRowTrace(cfg.TraceDir, &row)
	if err != nil {
		_, _ = w.Stop()
		return row, err
	}
	stopProfile, err := startRowCPUProfile(cfg.CPUProfileDir, &row)
	if err != nil {
		_ = stopTrace()
		_, _ = w.Stop()
		return row, err
	}
	before := takeSample(b.name)
	res := e.workers(ctx, b, sc, rv, c, before.at.Add(cfg.Duration), g)
	after := takeSample(b.name)
	if err := errors.Join(stopProfile(), stopTrace()); err != nil {
		_, _ = w.Stop()
		return row, err
	}
	if _, err := w.Stop(); err != nil {
		return row, fmt.Errorf("storage: background writes: %w", err)
	}
	row.Ops, row.Errors, row.FirstError, row.WrongCounts = res.ops, res.errs, res.firstErr, res.wrong
	row.fill(before, after, res.lat, res.items)
	row.fillGate(res.gateOpen, res.gateRun)
	if err := row.fillCPUSplit(); err != nil {
		return row, err
	}
	return row, nil
}

// LoopResult is what the workers of one row counted: every op's latency,
// ops, errors (the first one's text), wrong answers, items, and a
// gate-control row's waits. The apiserver benchmark's clients count the
// same way.
type LoopResult struct {
	lat []time.Duration
	// gateOpen and gateRun split a gate-control op's wait: from its start
	// until the gate opened, and from the opening until it ran again.
	gateOpen, gateRun       []time.Duration
	ops, errs, wrong, items int64
	firstErr                string
}

// Record counts one op that took d and returned items; wrong (a count
// other than the shape's) counts only for an op without error.
func (r *LoopResult) Record(d time.Duration, items int, err error, wrong bool) {
	r.lat = append(r.lat, d)
	r.ops++
	r.items += int64(items)
	if err != nil {
		r.errs++
		if r.firstErr == "" {
			r.firstErr = err.Error()
		}
	} else if wrong {
		r.wrong++
	}
}

// gateWait records one wait for a gate: started at t0, the gate opened
// at opened, and the waiter ran again at running.
func (r *LoopResult) gateWait(t0, opened, running time.Time) {
	r.gateOpen = append(r.gateOpen, max(opened.Sub(t0), 0))
	r.gateRun = append(r.gateRun, max(running.Sub(opened), 0))
}

// Add merges one worker's result into r.
func (r *LoopResult) Add(w LoopResult) {
	r.lat = append(r.lat, w.lat...)
	r.gateOpen = append(r.gateOpen, w.gateOpen...)
	r.gateRun = append(r.gateRun, w.gateRun...)
	r.ops += w.ops
	r.errs += w.errs
	r.wrong += w.wrong
	r.items += w.items
	if r.firstErr == "" {
		r.firstErr = w.firstErr
	}
}

// Counts returns what r counted besides items and gate waits.
func (r *LoopResult) Counts() (lat []time.Duration, ops, errs, wrong int64, firstErr string) {
	return r.lat, r.ops, r.errs, r.wrong, r.firstErr
}

// runGated is a Config.GateControl row: LIST by node at rv=0, each op
// preceded by a wait for the next opening of a gate that opens every
// period. The wait counts in the op's latency, as a freshness wait does.
func (e *Env) runGated(ctx context.Context, b *podBackend, cfg Config, c int, period time.Duration) (Row, error) {
	g := startGate(period)
	defer g.close()
	row, err := e.runLoop(ctx, b, cfg, ScenarioListNode, RVZero, c, cfg.Load, g)
	row.GateMs = ms(period)
	return row, err
}

// gate opens once per period: wait blocks until the next opening. One
// goroutine with a ticker owns the opening; waiters only read the
// current opening.
type gate struct {
	mu   sync.Mutex
	cur  *opening
	stop chan struct{}
	done chan struct{}
}

// opening is one opening of a gate: ch is closed at time at, which is
// written before the close, so a waiter that saw ch closed may read it.
type opening struct {
	ch chan struct{}
	at time.Time
}

func startGate(period time.Duration) *gate {
	g := &gate{cur: &opening{ch: make(chan struct{})}, stop: make(chan struct{}), done: make(chan struct{})}
	open := func(next *opening) {
		g.mu.Lock()
		o := g.cur
		g.cur = next
		o.at = time.Now()
		close(o.ch)
		g.mu.Unlock()
	}
	go func() {
		defer close(g.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-g.stop:
				open(g.cur) // nobody waits past the end
				return
			case <-t.C:
				open(&opening{ch: make(chan struct{})})
			}
		}
	}()
	return g
}

// wait blocks until the gate's next opening and returns when it opened
// (the zero time if ctx ended first). It is the gate's analogue of the
// moment the freshness driver releases a read.
func (g *gate) wait(ctx context.Context) time.Time {
	g.mu.Lock()
	o := g.cur
	g.mu.Unlock()
	select {
	case <-o.ch:
		return o.at
	case <-ctx.Done():
		return time.Time{}
	}
}

func (g *gate) close() {
	close(g.stop)
	<-g.done
}

// workers runs c closed-loop workers until deadline. With a gate, every op
// first waits for its next opening.
func (e *Env) workers(ctx context.Context, b *podBackend, sc, rv string, c int, deadline time.Time, g *gate) LoopResult {
	return ClosedLoop(ctx, c, deadline, func(r *rand.Rand, local *LoopResult) {
		t0 := time.Now()
		if g != nil {
			opened := g.wait(ctx)
			if !opened.IsZero() {
				local.gateWait(t0, opened, time.Now())
			}
		}
		res, err := e.op(ctx, b, sc, rv, r)
		local.Record(time.Since(t0), res.items, err, res.wrong)
	}, (*LoopResult).Add)
}

func sortDurations(d []time.Duration) { slices.Sort(d) }
