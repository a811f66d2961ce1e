package robustness

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/freshcache/freshcache/lab/test/robustness/counterload"
)

// healGrace is how long after a heal a 429 is still the partition's: a
// read that starts later, before the next cut, and gets a 429 is "late".
const healGrace = 250 * time.Millisecond

// slowRead is how long an answer may take before the read counts as held
// up by the partition (the negative control of healTally.Disturbed).
const slowRead = time.Second

// healCounts is one row of the report: the reads of one kind, or of all
// kinds, of one run. Stale counts within Answered, Late429 within TooMany.
// P99 is the 99th percentile of the reads' latencies, whatever their
// outcome, Max the longest.
type healCounts struct {
	Reads, Answered, Stale, TooMany, Late429, Server, Other int
	P99, Max                                                time.Duration
}

func (c *healCounts) add(o healCounts) {
	c.Reads += o.Reads
	c.Answered += o.Answered
	c.Stale += o.Stale
	c.TooMany += o.TooMany
	c.Late429 += o.Late429
	c.Server += o.Server
	c.Other += o.Other
}

// quantiles are the 99th percentile and the maximum of l (0 for none);
// it sorts l.
func quantiles(l []time.Duration) (p99, maxLatency time.Duration) {
	if len(l) == 0 {
		return 0, 0
	}
	slices.Sort(l)
	return l[min(len(l)-1, len(l)*99/100)], l[len(l)-1]
}

// healMessages groups error messages: digits are masked, so that "too
// large resource version: 812" and ": 815" are one message.
type healMessages map[string]*healMessage

type healMessage struct {
	Status  int
	Example string // the first message as the server sent it
	Count   int
	Kinds   map[counterload.Kind]int
}

var digits = regexp.MustCompile(`[0-9]+`)

func (m healMessages) add(r counterload.Read) {
	key := strconv.Itoa(r.Status) + " " + digits.ReplaceAllString(r.Err, "N")
	e := m[key]
	if e == nil {
		e = &healMessage{Status: r.Status, Example: r.Err, Kinds: map[counterload.Kind]int{}}
		m[key] = e
	}
	e.Count++
	e.Kinds[r.Kind]++
}

// sorted is the messages, most frequent first.
func (m healMessages) sorted() []*healMessage {
	out := make([]*healMessage, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Example < out[j].Example
	})
	return out
}

// lateRead is a late 429: how long after which heal it started.
type lateRead struct {
	Read      counterload.Read
	Heal      int // 1-based; 0: before the first cut
	SinceHeal time.Duration
}

// healTally is what one run's recording comes to.
type healTally struct {
	Name        string
	Flags       []string
	Binary      string
	Kinds       [counterload.Kinds]healCounts
	Total       healCounts
	Server      healMessages // the 5xx answers
	TooMany     healMessages // the 429 answers
	Other       healMessages // neither 2xx, 429 nor 5xx, or no answer
	Late        []lateRead
	ServerReads []counterload.Read // the first few 5xx answers, to show when they came
	// CatchUp is, per heal, how long after it R first answered a read
	// sent after the heal with every write completed before the heal:
	// the time its cache took to take in what the cut kept from it.
	// -1: not before the next cut (or the end).
	CatchUp []time.Duration
	// When the stale answers, 429s and 5xx came, by readPhase.
	StalePhases, TooManyPhases, ServerPhases [phases]int
	Cuts                                     []healWindow
	Writes                                   int
	WriteErrors                              []string
	// Disturbed counts the rv="" reads in flight while member 1 was cut
	// off that failed or took at least slowRead: proof that the
	// partition reached R.
	Disturbed int
}

// tallyHeal classifies every read of the recording.
func tallyHeal(o *healOutcome) *healTally {
	t := &healTally{
		Name: o.Name, Flags: o.Flags, Binary: o.Binary, Cuts: o.Windows,
		Writes: len(o.Writes), WriteErrors: o.WriteErrors,
		Server: healMessages{}, TooMany: healMessages{}, Other: healMessages{},
	}
	var latencies [counterload.Kinds][]time.Duration
	var all []time.Duration
	for _, r := range o.Reads {
		c := &t.Kinds[r.Kind]
		c.Reads++
		latencies[r.Kind] = append(latencies[r.Kind], r.End.Sub(r.Start))
		all = append(all, r.End.Sub(r.Start))
		ok := r.Status/100 == 2 && r.Err == ""
		ph := phaseOfRead(o.Windows, r)
		switch {
		case ok:
			c.Answered++
			if r.Value < counterload.NewestBefore(o.Writes, o.freshAsOf(r)) {
				c.Stale++
				t.StalePhases[ph]++
			}
		case r.Status == http.StatusTooManyRequests:
			c.TooMany++
			t.TooMany.add(r)
			t.TooManyPhases[ph]++
			if ph == phaseHealthy {
				heal, since, _ := healedFor(o.Windows, r.Start, healGrace)
				c.Late429++
				t.Late = append(t.Late, lateRead{Read: r, Heal: heal, SinceHeal: since})
			}
		case r.Status/100 == 5:
			c.Server++
			t.Server.add(r)
			t.ServerPhases[ph]++
			if len(t.ServerReads) < healExamples {
				t.ServerReads = append(t.ServerReads, r)
			}
		default:
			c.Other++
			t.Other.add(r)
		}
		consistent := r.Kind == counterload.GetConsistent || r.Kind == counterload.ListConsistent
		if consistent && overlapsCut(o.Windows, r) && (!ok || r.End.Sub(r.Start) >= slowRead) {
			t.Disturbed++
		}
	}
	for k := range counterload.Kinds {
		t.Kinds[k].P99, t.Kinds[k].Max = quantiles(latencies[k])
		t.Total.add(t.Kinds[k])
	}
	t.Total.P99, t.Total.Max = quantiles(all)
	t.CatchUp = catchUp(o)
	return t
}

// catchUp computes healTally.CatchUp.
func catchUp(o *healOutcome) []time.Duration {
	out := make([]time.Duration, len(o.Windows))
	for i, w := range o.Windows {
		target := counterload.NewestBefore(o.Writes, w.Heal)
		out[i] = -1
		for _, r := range o.Reads {
			if r.Status/100 != 2 || r.Err != "" || r.Value < target || r.Start.Before(w.Heal) {
				continue
			}
			if i+1 < len(o.Windows) && !r.Start.Before(o.Windows[i+1].Cut) {
				continue
			}
			if d := r.End.Sub(w.Heal); out[i] < 0 || d < out[i] {
				out[i] = d
			}
		}
	}
	return out
}

// readPhase is where a read lies in the isolation schedule.
type readPhase int

const (
	// phaseHealthy: in flight only while member 1 was connected, sent
	// before the first cut or more than healGrace after a heal. A 429
	// here is a late 429.
	phaseHealthy readPhase = iota
	// phaseCut: in flight at some time member 1 was cut off (a read sent
	// just before a cut that waits into it counts here, not as late).
	phaseCut
	// phaseGrace: sent within healGrace after a heal, answered before
	// the next cut.
	phaseGrace
	phases // the number of phases
)

func (p readPhase) String() string {
	return [...]string{"healthy", "in flight during a cut", fmt.Sprintf("sent within %s of a heal", healGrace)}[p]
}

func phaseOfRead(windows []healWindow, r counterload.Read) readPhase {
	if overlapsCut(windows, r) {
		return phaseCut
	}
	if _, _, ok := healedFor(windows, r.Start, healGrace); !ok {
		return phaseGrace
	}
	return phaseHealthy
}

// freshAsOf is the time a read must be at least as fresh as: its start,
// or for an rv=0 read under a staleness bound, that long before.
func (o *healOutcome) freshAsOf(r counterload.Read) time.Time {
	if r.Kind == counterload.GetZero || r.Kind == counterload.ListZero {
		return r.Start.Add(-o.ZeroStaleness)
	}
	return r.Start
}

// healedFor reports whether t lies in a healthy stretch: more than grace
// after heal number heal (1-based) and before the next cut, or before the
// first cut (heal 0: the cluster was healthy from the start).
func healedFor(windows []healWindow, t time.Time, grace time.Duration) (heal int, since time.Duration, ok bool) {
	if len(windows) == 0 || t.Before(windows[0].Cut) {
		return 0, 0, true
	}
	for i, w := range windows {
		next := i+1 == len(windows) || t.Before(windows[i+1].Cut)
		if !t.Before(w.Cut) && next {
			since := t.Sub(w.Heal)
			return i + 1, since, since > grace
		}
	}
	return 0, 0, false
}

// overlapsCut reports whether r was in flight at some time member 1 was
// cut off: a read that started just before a cut can wait through it.
func overlapsCut(windows []healWindow, r counterload.Read) bool {
	for _, w := range windows {
		if r.Start.Before(w.Heal) && r.End.After(w.Cut) {
			return true
		}
	}
	return false
}

// phase places t in the schedule: before the first cut, so long into
// cut i, or so long after heal i (1-based).
func phase(windows []healWindow, t time.Time) string {
	if len(windows) == 0 || t.Before(windows[0].Cut) {
		return "before the first cut"
	}
	for i := len(windows) - 1; i >= 0; i-- {
		w := windows[i]
		switch {
		case !t.Before(w.Heal):
			return fmt.Sprintf("%s after heal %d", t.Sub(w.Heal).Round(time.Millisecond), i+1)
		case !t.Before(w.Cut):
			return fmt.Sprintf("%s into cut %d", t.Sub(w.Cut).Round(time.Millisecond), i+1)
		}
	}
	return "before the first cut"
}
