package checker

import (
	"sort"
	"strconv"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// observation is one thing a client learned, at a point in its own
// timeline.
type observation struct {
	time int64
	op   *record.Op           // a read or write result
	ev   *record.WatchEvent   // or a watch event
	s    *record.WatchSession // the event's session
}

// checkTimeTravel replays each client's observations in the order the
// client made them and keeps its frontier F: the highest revision it has
// seen (a LIST's RV, an object's modRev, a write's revision, a watch event
// or bookmark). Whatever cache the client talks to next:
//
//   - a LIST (any resourceVersion) must have RV >= F;
//   - a GET must not return a version of the object that etcd had already
//     replaced at a revision <= F; nor "not found" for an object that
//     existed at F and was never deleted afterwards (a NotFound carries no
//     RV, so only this certain case is judged);
//   - a watch event must not be older than F (checked as ordering by the
//     watch checkers for events within a chain; here across chains).
//
// This is kubernetes#59848: a client that saw a pod deleted must never see
// it alive again, whichever apiserver it asks.
//
// An rv=0 read under a staleness bound (Run.RV0Staleness) promises only
// what was acknowledged that long before its call: Check has moved its
// call back by the bound, and it is judged against the frontier the
// client had reached by then, not the one it has when the read returns.
func checkTimeTravel(r *Report, run *record.Run, truth *record.Truth) {
	byClient := map[int][]observation{}
	for i := range run.Ops {
		op := &run.Ops[i]
		if op.Out != record.OK {
			continue
		}
		byClient[op.Client] = append(byClient[op.Client], observation{time: op.Return, op: op})
	}
	for i := range run.Sessions {
		s := &run.Sessions[i]
		for j := range s.Events {
			e := &s.Events[j]
			if e.Type == record.Error {
				continue
			}
			byClient[s.Watcher] = append(byClient[s.Watcher], observation{time: e.Time, ev: e, s: s})
		}
	}
	clients := make([]int, 0, len(byClient))
	for c := range byClient {
		clients = append(clients, c)
	}
	sort.Ints(clients)
	for _, c := range clients {
		obs := byClient[c]
		sort.SliceStable(obs, func(i, j int) bool { return obs[i].time < obs[j].time })
		var frontier int64
		var from string
		// reached records each rise of the frontier, in time order, for
		// the bounded rv=0 reads.
		var reached []rise
		for _, o := range obs {
			r.Checked["client-observations"]++
			before := frontier
			// judge is what this observation must not be older than.
			judge, judgeFrom := frontier, from
			if o.op != nil && boundedZero(run, o.op) {
				judge, judgeFrom = frontierAt(reached, o.op.Call)
			}
			if o.ev != nil {
				if o.ev.RV < judge && o.ev.Type != record.Bookmark {
					r.add(TimeTravel, "client %d: watch on cache %d delivered %s %s at RV %d after the client observed RV %d (%s)", c, o.s.Cache, o.ev.Type, o.ev.Name, o.ev.RV, judge, judgeFrom)
				}
				if o.ev.RV > frontier {
					frontier, from = o.ev.RV, "watch event on cache "+itoa(int64(o.s.Cache))
				}
			} else {
				op := o.op
				switch {
				case op.IsWrite():
					if op.RV > frontier {
						frontier, from = op.RV, "own "+string(op.Kind)+" op "+itoa(int64(op.ID))
					}
				case op.Kind == record.List:
					if op.RV < judge {
						r.add(TimeTravel, "client %d: %s LIST (node %q) on cache %d returned RV %d after the client observed RV %d (%s); op %d", c, op.Mode, op.Node, op.Cache, op.RV, judge, judgeFrom, op.ID)
					}
					if op.RV > frontier {
						frontier, from = op.RV, string(op.Mode)+" LIST op "+itoa(int64(op.ID))+" on cache "+itoa(int64(op.Cache))
					}
				case op.Kind == record.Get && !op.Found:
					if _, existed := truth.StateAt(op.Name, judge); existed && !truth.DeletedAfter(op.Name, judge) {
						r.add(TimeTravel, "client %d: %s GET %s on cache %d returned not found, but it existed at RV %d, which the client observed (%s), and was never deleted after; op %d", c, op.Mode, op.Name, op.Cache, judge, judgeFrom, op.ID)
					}
				case op.Kind == record.Get && op.Found:
					if next := truth.NextChange(op.Name, op.RV); next != 0 && next <= judge {
						r.add(TimeTravel, "client %d: %s GET %s on cache %d returned the version at %d, which etcd replaced at %d, after the client observed RV %d (%s); op %d", c, op.Mode, op.Name, op.Cache, op.RV, next, judge, judgeFrom, op.ID)
					}
					if op.RV > frontier {
						frontier, from = op.RV, string(op.Mode)+" GET op "+itoa(int64(op.ID))+" on cache "+itoa(int64(op.Cache))
					}
				}
			}
			if frontier > before {
				reached = append(reached, rise{time: o.time, frontier: frontier, from: from})
			}
		}
	}
}

// rise is the frontier a client reached by an observation at time.
type rise struct {
	time     int64
	frontier int64
	from     string
}

// frontierAt is the frontier from observations made strictly before t.
func frontierAt(reached []rise, t int64) (int64, string) {
	i := sort.Search(len(reached), func(i int) bool { return reached[i].time >= t })
	if i == 0 {
		return 0, ""
	}
	return reached[i-1].frontier, reached[i-1].from
}

// boundedZero reports whether op is an rv=0 read judged at its moved call
// (boundZeroReads): rv=0 reads are fresh within a positive bound here.
func boundedZero(run *record.Run, op *record.Op) bool {
	return run.RV0Consistent && run.RV0Staleness > 0 && op.Mode == record.Zero && !op.IsWrite()
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
