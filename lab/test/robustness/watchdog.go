package robustness

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"
)

// The checkers judge a run's history: they find stale or lost answers, not
// a run that stops. A cache that hangs (a reader that ignores its context,
// a Stop that never returns) used to be caught only by go test's timeout,
// 15 minutes later, with a dump of thousands of goroutines and no word on
// what was stuck.
//
// The watchdog bounds every step of a run instead. Each client op, watch
// session, fault and harness step registers with its own deadline (op
// timeout, watch timeout, recovery timeout); its limit is that plus a
// grace period, which a healthy run never comes near. The first step found past its
// limit stops the run with a report that names it, how long it has been
// running, every other step still in flight, and the stacks of every
// goroutine.

// stallGrace is the default grace: a step that honours its context ends
// within its deadline plus scheduling noise; half a minute over it is a
// hang, even on a loaded 2-core machine.
const stallGrace = 30 * time.Second

// watchdog tracks the steps of a run in flight. A nil *watchdog is valid
// and tracks nothing.
type watchdog struct {
	// onStall receives the report of the first stall; it is called once,
	// from run's goroutine, which then returns.
	onStall func(report string)
	// grace is added to every step's own deadline.
	grace time.Duration

	mu struct {
		sync.Mutex
		next  uint64
		steps map[uint64]step
	}
}

type step struct {
	id    uint64 // order of begin
	what  string
	began time.Time
	limit time.Duration
}

func newWatchdog(onStall func(report string), grace time.Duration) *watchdog {
	w := &watchdog{onStall: onStall, grace: grace}
	w.mu.steps = make(map[uint64]step)
	return w
}

// begin registers a step whose own deadline is own: it must end within own
// plus the grace. The returned func ends it; it is idempotent.
func (w *watchdog) begin(what string, own time.Duration) (end func()) {
	if w == nil {
		return func() {}
	}
	w.mu.Lock()
	w.mu.next++
	id := w.mu.next
	w.mu.steps[id] = step{id: id, what: what, began: time.Now(), limit: own + w.grace}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.mu.steps, id)
		w.mu.Unlock()
	}
}

// inFlight returns the steps in flight, oldest first, and those of them
// past their limit at now.
func (w *watchdog) inFlight(now time.Time) (all, overdue []step) {
	w.mu.Lock()
	for _, s := range w.mu.steps {
		all = append(all, s)
	}
	w.mu.Unlock()
	slices.SortFunc(all, func(a, b step) int { return cmp.Compare(a.id, b.id) })
	for _, s := range all {
		if now.Sub(s.began) > s.limit {
			overdue = append(overdue, s)
		}
	}
	return all, overdue
}

// run checks the steps every period until ctx is done, and reports the
// first stall (then stops checking: one report per run).
func (w *watchdog) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			all, overdue := w.inFlight(now)
			if len(overdue) == 0 {
				continue
			}
			w.onStall(stallReport(now, all, overdue))
			return
		}
	}
}

// stallReport describes a stall: the overdue steps, everything else in
// flight and every goroutine's stack.
func stallReport(now time.Time, all, overdue []step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "robustness: no progress: %d step(s) past their limit\n", len(overdue))
	for _, s := range overdue {
		fmt.Fprintf(&b, "  STUCK %s: running for %v, limit %v\n", s.what, now.Sub(s.began).Round(time.Millisecond), s.limit)
	}
	fmt.Fprintf(&b, "steps in flight (%d), oldest first:\n", len(all))
	for _, s := range all {
		fmt.Fprintf(&b, "  %s: %v\n", s.what, now.Sub(s.began).Round(time.Millisecond))
	}
	var stacks bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&stacks, 2); err != nil {
		fmt.Fprintf(&stacks, "(goroutine dump failed: %v)\n", err)
	}
	b.WriteString("goroutines:\n")
	b.Write(stacks.Bytes())
	return b.String()
}
