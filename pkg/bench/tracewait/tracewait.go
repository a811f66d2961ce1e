package tracewait

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/oracle"
)

// Options says which regions to read. The zero value reads freshcache's.
type Options struct {
	// WaitRegion and FetchRegion name the regions. Defaults:
	// watchcache.TraceRegionWait and oracle.TraceRegionFetch.
	WaitRegion, FetchRegion string
	// SlowQuantile picks the slow waits whose release-to-run windows are
	// examined: those at or above this quantile of the total wait.
	// Default 0.99.
	SlowQuantile float64
}

// Dist is a distribution of durations.
type Dist struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// CPU is running time by whose goroutine ran.
type CPU struct {
	// Readers are goroutines that entered a wait region at least once.
	Readers time.Duration
	// GCWorkers are the runtime's background mark workers.
	GCWorkers time.Duration
	// Other is every other goroutine (etcd, gRPC, the cache's own).
	Other time.Duration
}

// Total is the sum of the three.
func (c CPU) Total() time.Duration { return c.Readers + c.GCWorkers + c.Other }

// Slow describes the waits at or above Options.SlowQuantile.
type Slow struct {
	// Threshold is that quantile of the total wait.
	Threshold time.Duration
	// N is how many waits reached it; InGCMark how many of those overlapped
	// a GC mark phase.
	N, InGCMark int
	// UntilRelease and ReleaseToRun are their mean parts.
	UntilRelease, ReleaseToRun time.Duration
	// CPU is who ran during their release-to-run windows, summed over the
	// windows (which may overlap).
	CPU CPU
}

// Report is what Analyze found.
type Report struct {
	// Span is from the first to the last event of the trace.
	Span time.Duration
	// Procs is the largest number of Ps seen running goroutines at once
	// (GOMAXPROCS, if the trace kept them all busy).
	Procs int
	// Total, UntilRelease and ReleaseToRun split each wait; see the package
	// doc. NotBlocked counts waits whose reader never blocked.
	Total, UntilRelease, ReleaseToRun Dist
	NotBlocked                        int
	// Fetch is the fetch regions' durations.
	Fetch Dist
	// GCMark is the time the trace spent in GC mark phases.
	GCMark time.Duration
	// CPU is who ran over the whole trace.
	CPU CPU
	// Slow looks at the slowest waits.
	Slow Slow
}

type span struct{ start, end trace.Time }

type wait struct {
	g              trace.GoID
	start, release trace.Time
	end            trace.Time
}

// goroutine is what Analyze keeps of one goroutine.
type goroutine struct {
	running   []span // closed running intervals, in order
	runSince  trace.Time
	isRunning bool
	reader    bool
	gcWorker  bool
	// lastWake is the last Waiting->Runnable transition; waitOpen the
	// start of the wait region the goroutine is in, if any.
	lastWake trace.Time
	waitOpen trace.Time
	inWait   bool
	fetch    []trace.Time // open fetch regions (a stack)
}

// Analyze reads a whole trace from r.
func Analyze(r io.Reader, opts Options) (Report, error) {
	if opts.WaitRegion == "" {
		opts.WaitRegion = watchcache.TraceRegionWait
	}
	if opts.FetchRegion == "" {
		opts.FetchRegion = oracle.TraceRegionFetch
	}
	if opts.SlowQuantile == 0 {
		opts.SlowQuantile = 0.99
	}
	if opts.SlowQuantile <= 0 || opts.SlowQuantile >= 1 {
		return Report{}, fmt.Errorf("tracewait: SlowQuantile %v not in (0, 1)", opts.SlowQuantile)
	}
	tr, err := trace.NewReader(r)
	if err != nil {
		return Report{}, fmt.Errorf("tracewait: %w", err)
	}
	a := analysis{gs: map[trace.GoID]*goroutine{}, opts: opts}
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Report{}, fmt.Errorf("tracewait: %w", err)
		}
		a.event(ev)
	}
	if a.first == 0 && a.last == 0 {
		return Report{}, errors.New("tracewait: empty trace")
	}
	return a.report(), nil
}

type analysis struct {
	opts        Options
	gs          map[trace.GoID]*goroutine
	waits       []wait
	fetches     []time.Duration
	marks       []span
	markOpen    trace.Time
	inMark      bool
	first, last trace.Time
	running     int
	maxRunning  int
}

func (a *analysis) g(id trace.GoID) *goroutine {
	g := a.gs[id]
	if g == nil {
		g = &goroutine{}
		a.gs[id] = g
	}
	return g
}

func (a *analysis) event(ev trace.Event) {
	t := ev.Time()
	if a.first == 0 {
		a.first = t
	}
	a.last = t
	switch ev.Kind() {
	case trace.EventStateTransition:
		a.transition(ev)
	case trace.EventRegionBegin:
		a.regionBegin(ev.Goroutine(), ev.Region().Type, t)
	case trace.EventRegionEnd:
		a.regionEnd(ev.Goroutine(), ev.Region().Type, t)
	case trace.EventRangeBegin, trace.EventRangeActive:
		if isMark(ev.Range().Name) && !a.inMark {
			a.inMark, a.markOpen = true, t
		}
	case trace.EventRangeEnd:
		if isMark(ev.Range().Name) && a.inMark {
			a.inMark = false
			a.marks = append(a.marks, span{a.markOpen, t})
		}
	}
}

func isMark(name string) bool { return strings.HasPrefix(name, "GC concurrent mark") }

func (a *analysis) transition(ev trace.Event) {
	st := ev.StateTransition()
	if st.Resource.Kind != trace.ResourceGoroutine {
		return
	}
	g := a.g(st.Resource.Goroutine())
	from, to := st.Goroutine()
	if !g.gcWorker && rootIs(st.Stack, "runtime.gcBgMarkWorker") {
		g.gcWorker = true
	}
	t := ev.Time()
	if g.isRunning && to != trace.GoRunning {
		g.running = append(g.running, span{g.runSince, t})
		g.isRunning = false
		a.running--
	}
	if to == trace.GoRunning && !g.isRunning {
		g.isRunning, g.runSince = true, t
		a.running++
		a.maxRunning = max(a.maxRunning, a.running)
	}
	if from == trace.GoWaiting && to == trace.GoRunnable {
		g.lastWake = t
	}
}

// rootIs reports whether the outermost frame of s is fn.
func rootIs(s trace.Stack, fn string) bool {
	root := ""
	for f := range s.Frames() {
		root = f.Func
	}
	return root == fn
}

func (a *analysis) regionBegin(id trace.GoID, typ string, t trace.Time) {
	g := a.g(id)
	switch typ {
	case a.opts.WaitRegion:
		g.reader, g.inWait, g.waitOpen = true, true, t
	case a.opts.FetchRegion:
		g.fetch = append(g.fetch, t)
	}
}

func (a *analysis) regionEnd(id trace.GoID, typ string, t trace.Time) {
	g := a.g(id)
	switch typ {
	case a.opts.WaitRegion:
		if !g.inWait {
			return // opened before the trace began
		}
		g.inWait = false
		w := wait{g: id, start: g.waitOpen, release: g.waitOpen, end: t}
		if g.lastWake > g.waitOpen {
			w.release = g.lastWake
		}
		a.waits = append(a.waits, w)
	case a.opts.FetchRegion:
		if n := len(g.fetch); n > 0 {
			a.fetches = append(a.fetches, time.Duration(t-g.fetch[n-1]))
			g.fetch = g.fetch[:n-1]
		}
	}
}

func (a *analysis) report() Report {
	rep := Report{Span: time.Duration(a.last - a.first), Procs: a.maxRunning}
	if a.inMark {
		a.marks = append(a.marks, span{a.markOpen, a.last})
	}
	for _, m := range a.marks {
		rep.GCMark += time.Duration(m.end - m.start)
	}
	// Close running intervals at the end of the trace.
	for _, g := range a.gs {
		if g.isRunning {
			g.running = append(g.running, span{g.runSince, a.last})
			g.isRunning = false
		}
	}
	rep.CPU = a.cpu(span{a.first, a.last})

	total := make([]time.Duration, len(a.waits))
	until := make([]time.Duration, len(a.waits))
	toRun := make([]time.Duration, len(a.waits))
	for i, w := range a.waits {
		total[i] = time.Duration(w.end - w.start)
		until[i] = time.Duration(w.release - w.start)
		toRun[i] = time.Duration(w.end - w.release)
		if w.release == w.start {
			rep.NotBlocked++
		}
	}
	rep.Total, rep.UntilRelease, rep.ReleaseToRun = dist(total), dist(until), dist(toRun)
	rep.Fetch = dist(a.fetches)

	if len(a.waits) > 0 {
		rep.Slow.Threshold = quantile(slices.Sorted(slices.Values(total)), a.opts.SlowQuantile)
		var sumUntil, sumToRun time.Duration
		for i, w := range a.waits {
			if total[i] < rep.Slow.Threshold {
				continue
			}
			rep.Slow.N++
			sumUntil += until[i]
			sumToRun += toRun[i]
			if a.overlapsMark(span{w.start, w.end}) {
				rep.Slow.InGCMark++
			}
			c := a.cpu(span{w.release, w.end})
			rep.Slow.CPU.Readers += c.Readers
			rep.Slow.CPU.GCWorkers += c.GCWorkers
			rep.Slow.CPU.Other += c.Other
		}
		rep.Slow.UntilRelease = sumUntil / time.Duration(rep.Slow.N)
		rep.Slow.ReleaseToRun = sumToRun / time.Duration(rep.Slow.N)
	}
	return rep
}

func (a *analysis) overlapsMark(s span) bool {
	for _, m := range a.marks {
		if m.start < s.end && m.end > s.start {
			return true
		}
	}
	return false
}

// cpu sums the running time of every goroutine inside win, by class.
func (a *analysis) cpu(win span) CPU {
	var c CPU
	if win.end <= win.start {
		return c
	}
	for _, g := range a.gs {
		// Intervals are in order; skip to the first that ends after win.start.
		i, _ := slices.BinarySearchFunc(g.running, win.start, func(s span, t trace.Time) int {
			if s.end <= t {
				return -1
			}
			return 1
		})
		var d time.Duration
		for ; i < len(g.running) && g.running[i].start < win.end; i++ {
			lo, hi := max(g.running[i].start, win.start), min(g.running[i].end, win.end)
			if hi > lo {
				d += time.Duration(hi - lo)
			}
		}
		switch {
		case g.gcWorker:
			c.GCWorkers += d
		case g.reader:
			c.Readers += d
		default:
			c.Other += d
		}
	}
	return c
}

func dist(xs []time.Duration) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Sorted(slices.Values(xs))
	return Dist{N: len(s), P50: quantile(s, 0.5), P90: quantile(s, 0.9), P99: quantile(s, 0.99), Max: s[len(s)-1]}
}

// quantile is the nearest-rank quantile of sorted s.
func quantile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
