package kindupgrade

import (
	"sort"
	"time"

	"github.com/freshcache/freshcache/lab/test/robustness/counterload"
)

// Change is one step as it ran: the manifest edited at Edit, the new
// kube-apiserver serving at Ready.
type Change struct {
	Step        Step
	Edit, Ready time.Time
}

// Read is one read through control plane CP (0-based).
type Read struct {
	CP int
	counterload.Read
}

// Recording is what a run saw.
type Recording struct {
	ControlPlanes int
	// ZeroStaleness is freshcache's bound on rv=0 reads
	// (--resource-version-zero-max-staleness).
	ZeroStaleness time.Duration
	Began, Over   time.Time
	Changes       []Change
	Writes        []counterload.Write // in completion order
	WriteErrors   []counterload.WriteError
	Reads         []Read
	// Opens are the pod informers' LISTs and watch opens; Informers is
	// how many informers ran.
	Opens     []Open
	Informers int
}

// Open is one LIST or watch open of pod informer Informer.
type Open struct {
	Informer int
	At       time.Time
	List     bool
}

// Counts are one window's tallies.
type Counts struct {
	Reads, Answered int
	// Stale: answers older than the newest write acknowledged before
	// the read began (rv=0 on freshcache: that long before, less the
	// bound) on a read the serving cache promised fresh. Must be 0.
	Stale int
	// OlderZero: rv=0 answers older than that, from a cache that did
	// not promise them fresh (upstream's, or an apiserver being
	// replaced). Allowed; shown for comparison.
	OlderZero int
	// Failed reads by HTTP status (0: no answer).
	Failed map[int]int
	// WriteErrors, Relists, WatchRestarts in the window.
	WriteErrors, Relists, WatchRestarts int
}

// FailedReads is the number of reads that did not get a 2xx answer.
func (c Counts) FailedReads() int {
	n := 0
	for _, v := range c.Failed {
		n += v
	}
	return n
}

// Window is one stretch of the run: the baseline before the first step,
// or a step from its edit to the next step's edit (or the end).
type Window struct {
	Name, Phase string
	Start, End  time.Time
	// Caches is what each control plane ran at the window's end.
	Caches []string
	// Downtime is from the edit until the new kube-apiserver served
	// (zero for the baseline).
	Downtime time.Duration
	Counts   Counts
}

// Tally splits the recording into windows and classifies every read.
func Tally(rec *Recording) []Window {
	steps := make([]Step, len(rec.Changes))
	for i, c := range rec.Changes {
		steps[i] = c.Step
	}
	wins := []Window{{Name: "baseline: every apiserver on upstream's cacher", Phase: "baseline", Start: rec.Began, Caches: Caches(rec.ControlPlanes, steps, 0)}}
	for i, c := range rec.Changes {
		wins[len(wins)-1].End = c.Edit
		wins = append(wins, Window{Name: c.Step.Name, Phase: c.Step.Phase, Start: c.Edit, Downtime: c.Ready.Sub(c.Edit), Caches: Caches(rec.ControlPlanes, steps, i+1)})
	}
	wins[len(wins)-1].End = rec.Over
	for i := range wins {
		wins[i].Counts.Failed = map[int]int{}
	}
	at := func(t time.Time) *Counts {
		i := sort.Search(len(wins), func(i int) bool { return wins[i].End.After(t) })
		if i == len(wins) {
			i--
		}
		return &wins[i].Counts
	}
	for _, r := range rec.Reads {
		c := at(r.Start)
		c.Reads++
		if !r.OK() {
			c.Failed[r.Status]++
			continue
		}
		c.Answered++
		promised, asOf := rec.promise(r)
		if r.Value < counterload.NewestBefore(rec.Writes, asOf) {
			if promised {
				c.Stale++
			} else {
				c.OlderZero++
			}
		}
	}
	for _, e := range rec.WriteErrors {
		at(e.At).WriteErrors++
	}
	// An informer starts with a LIST and a watch, or with a watch alone
	// (a watch-list); what it opens after that is a relist or a watch
	// restart.
	started := map[int]bool{}
	watched := map[int]bool{}
	for _, o := range rec.Opens {
		switch {
		case o.List && !started[o.Informer]:
		case o.List:
			at(o.At).Relists++
		case watched[o.Informer]:
			at(o.At).WatchRestarts++
		default:
			watched[o.Informer] = true
		}
		started[o.Informer] = true
	}
	return wins
}

// promise says whether the cache that answered r promised it fresh, and
// the time its answer must be at least as fresh as. rv="" is promised by
// both caches, as of the read's start. rv=0 is promised only by
// freshcache, as of the start less the bound, and not by an apiserver
// that was being replaced while the read was in flight.
func (rec *Recording) promise(r Read) (bool, time.Time) {
	if !r.Kind.Zero() {
		return true, r.Start
	}
	asOf := r.Start.Add(-rec.ZeroStaleness)
	cache := Upstream
	for _, c := range rec.Changes {
		if c.Step.Target != r.CP {
			continue
		}
		if r.Start.Before(c.Ready) && r.End.After(c.Edit) {
			return false, r.Start // in flight while the apiserver was replaced
		}
		if !c.Ready.After(r.Start) {
			cache = c.Step.To
		}
	}
	if cache != Freshcache {
		return false, r.Start
	}
	return true, asOf
}
