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
	// MinIdle is the shortest stretch with fewer busy Ps than the trace
	// has that counts as idle; shorter ones are a goroutine switch.
	// Default 20µs.
	MinIdle time.Duration
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
	// Idle is P time left idle: Ps running no goroutine, or only an
	// idle-priority GC mark worker (which the runtime runs on a P that
	// has nothing else), in stretches of at least Options.MinIdle.
	Idle time.Duration
	// FetchToIdle is, for each fetch, the time from its start until some P
	// first fell idle; IdleToAnswer the rest, until the fetch answered.
	// FetchNoIdle counts fetches during which no P fell idle (they are in
	// neither Dist).
	FetchToIdle, IdleToAnswer Dist
	FetchNoIdle               int
	// MinIdle is Options.MinIdle, as used.
	MinIdle time.Duration
	// GCMark is the time the trace spent in GC mark phases.
	GCMark time.Duration
	// CPU is who ran over the whole trace.
	CPU CPU
	// Slow looks at the slowest waits.
	Slow Slow
}

type span struct{ start, end trace.Time }

// busyPoint is the number of busy goroutines from t on (see Report.Idle).
type busyPoint struct {
	t trace.Time
	n int
}

// idleGCLabel is the runtime's trace label on a GC mark worker that runs
// in idle mode.
const idleGCLabel = "GC (idle)"

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
	// idleGC: running now as an idle-priority GC mark worker, so not busy.
	idleGC bool
	// lastWake is the last Waiting->Runnable transition out of a block
	// that was not a GC assist (gcAssist: the block now is one); waitOpen
	// the start of the wait region the goroutine is in, if any.
	lastWake trace.Time
	gcAssist bool
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
	if opts.MinIdle == 0 {
		opts.MinIdle = 20 * time.Microsecond
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
	fetches     []span
	busy        int
	busyPts     []busyPoint
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
	case trace.EventLabel:
		a.label(ev)
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
		if g.idleGC {
			g.idleGC = false
		} else {
			a.setBusy(t, a.busy-1)
		}
	}
	if to == trace.GoRunning && !g.isRunning {
		g.isRunning, g.runSince = true, t
		a.running++
		a.maxRunning = max(a.maxRunning, a.running)
		a.setBusy(t, a.busy+1)
	}
	if to == trace.GoWaiting {
		g.gcAssist = inStack(st.Stack, "runtime.gcAssistAlloc")
	}
	if from == trace.GoWaiting && to == trace.GoRunnable && !g.gcAssist {
		g.lastWake = t
	}
}

// label notes a GC mark worker that started in idle mode: its P counts as
// idle while it runs.
func (a *analysis) label(ev trace.Event) {
	l := ev.Label()
	if l.Label != idleGCLabel || l.Resource.Kind != trace.ResourceGoroutine {
		return
	}
	g := a.g(l.Resource.Goroutine())
	if g.isRunning && !g.idleGC {
		g.idleGC = true
		a.setBusy(ev.Time(), a.busy-1)
	}
}

func (a *analysis) setBusy(t trace.Time, n int) {
	a.busy = n
	a.busyPts = append(a.busyPts, busyPoint{t, n})
}

// inStack reports whether any frame of s is fn.
func inStack(s trace.Stack, fn string) bool {
	for f := range s.Frames() {
		if f.Func == fn {
			return true
		}
	}
	return false
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
			a.fetches = append(a.fetches, span{g.fetch[n-1], t})
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
	sortedTotal := slices.Sorted(slices.Values(total))
	rep.Total, rep.UntilRelease, rep.ReleaseToRun = distSorted(sortedTotal), dist(until), dist(toRun)
	fetches := make([]time.Duration, len(a.fetches))
	for i, f := range a.fetches {
		fetches[i] = time.Duration(f.end - f.start)
	}
	rep.Fetch = dist(fetches)
	a.idle(&rep)

	if len(a.waits) > 0 {
		rep.Slow.Threshold = quantile(sortedTotal, a.opts.SlowQuantile)
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
		i := firstEndingAfter(g.running, win.start)
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

func dist(xs []time.Duration) Dist { return distSorted(slices.Sorted(slices.Values(xs))) }

// distSorted is dist of an already sorted s.
func distSorted(s []time.Duration) Dist {
	if len(s) == 0 {
		return Dist{}
	}
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

// idleSpans returns the stretches of at least MinIdle during which fewer
// goroutines were busy than procs, with the P time they left idle.
func (a *analysis) idleSpans(procs int) ([]span, time.Duration) {
	var (
		out   []span
		total time.Duration
		open  bool
		from  trace.Time
		sum   time.Duration // idle P time inside the open stretch
	)
	closeAt := func(t trace.Time) {
		if open && time.Duration(t-from) >= a.opts.MinIdle {
			out = append(out, span{from, t})
			total += sum
		}
		open, sum = false, 0
	}
	for i, p := range a.busyPts {
		end := a.last
		if i+1 < len(a.busyPts) {
			end = a.busyPts[i+1].t
		}
		if p.n >= procs {
			closeAt(p.t)
			continue
		}
		if !open {
			open, from = true, p.t
		}
		sum += time.Duration(end-p.t) * time.Duration(procs-p.n)
	}
	closeAt(a.last)
	return out, total
}

// idle fills the idle P time and splits each fetch at the first idle
// stretch that overlaps it.
func (a *analysis) idle(rep *Report) {
	spans, total := a.idleSpans(rep.Procs)
	rep.Idle, rep.MinIdle = total, a.opts.MinIdle
	var toIdle, afterIdle []time.Duration
	for _, f := range a.fetches {
		i := firstEndingAfter(spans, f.start)
		if i == len(spans) || spans[i].start >= f.end {
			rep.FetchNoIdle++
			continue
		}
		at := max(spans[i].start, f.start)
		toIdle = append(toIdle, time.Duration(at-f.start))
		afterIdle = append(afterIdle, time.Duration(f.end-at))
	}
	rep.FetchToIdle, rep.IdleToAnswer = dist(toIdle), dist(afterIdle)
}

// firstEndingAfter returns the index of the first of the ordered,
// non-overlapping spans that ends after t (len(spans) if none does).
func firstEndingAfter(spans []span, t trace.Time) int {
	i, _ := slices.BinarySearchFunc(spans, t, func(s span, t trace.Time) int {
		if s.end <= t {
			return -1
		}
		return 1
	})
	return i
}
