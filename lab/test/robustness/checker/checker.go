package checker

import (
	"fmt"
	"sort"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Checker names, in report order.
const (
	Linearizability    = "linearizability"
	FreshList          = "fresh-list"
	MatchesEtcd        = "matches-etcd"
	WatchOrdered       = "watch-ordered"
	WatchUnique        = "watch-unique"
	WatchAtomic        = "watch-atomic"
	WatchBookmarkable  = "watch-bookmarkable"
	WatchReliable      = "watch-reliable"
	WatchResumable     = "watch-resumable"
	WatchMatchesEtcd   = "watch-matches-etcd"
	TimeTravel         = "time-travel"
	NothingLost        = "nothing-lost"
	maxDetailsPerCheck = 50
)

// Names lists every checker, in report order.
var Names = []string{
	Linearizability, FreshList, MatchesEtcd,
	WatchOrdered, WatchUnique, WatchAtomic, WatchBookmarkable, WatchReliable, WatchResumable, WatchMatchesEtcd,
	TimeTravel, NothingLost,
}

// Report is the verdict on a run.
type Report struct {
	// Counts has one entry per checker in Names, 0 when it found nothing.
	Counts map[string]int
	// Details holds up to 50 human-readable violations per checker.
	Details map[string][]string
	// Porcupine is the linearizability check's result, for the HTML
	// visualization (nil when there was nothing to check).
	Porcupine *PorcupineResult
	// Checked counts what was checked, for the summary.
	Checked map[string]int
}

// Total is the number of violations of every checker.
func (r *Report) Total() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

func (r *Report) add(checker, format string, args ...any) {
	r.Counts[checker]++
	if len(r.Details[checker]) < maxDetailsPerCheck {
		r.Details[checker] = append(r.Details[checker], fmt.Sprintf(format, args...))
	}
}

// Options select checks.
type Options struct {
	// SkipPorcupine leaves out the porcupine check (unit tests of other
	// checkers).
	SkipPorcupine bool
}

// Check runs every checker on run.
func Check(run *record.Run, opts Options) *Report {
	r := &Report{Counts: map[string]int{}, Details: map[string][]string{}, Checked: map[string]int{}}
	run = boundZeroReads(run)
	for _, n := range Names {
		r.Counts[n] = 0
	}
	truth := record.NewTruth(run.Truth)
	checkTruth(r, run, truth)
	resolved := resolveWrites(r, run, truth)
	if !opts.SkipPorcupine {
		r.Porcupine = checkLinearizable(r, run, resolved, truth)
	}
	checkFreshLists(r, run, resolved)
	checkReads(r, run, truth)
	checkWatches(r, run, truth)
	checkTimeTravel(r, run, truth)
	return r
}

// boundZeroReads returns run with the call of every rv=0 read moved
// RV0Staleness earlier, when rv=0 reads are fresh within that bound: such
// a read must reflect exactly the writes acknowledged that long before it
// was called, which is what every checker then asks of a read called at
// the moved time. run itself is not changed.
func boundZeroReads(run *record.Run) *record.Run {
	if !run.RV0Consistent || run.RV0Staleness <= 0 {
		return run
	}
	out := *run
	out.Ops = append([]record.Op(nil), run.Ops...)
	for i := range out.Ops {
		if op := &out.Ops[i]; op.Mode == record.Zero && !op.IsWrite() {
			op.Call -= run.RV0Staleness
		}
	}
	return &out
}

// consistentRead reports whether op is a read that promises linearizability
// in this run.
func consistentRead(run *record.Run, op *record.Op) bool {
	if op.IsWrite() || op.Out != record.OK {
		return false
	}
	return op.Mode == record.Consistent || (op.Mode == record.Zero && run.RV0Consistent)
}

// checkTruth verifies that etcd's history is complete: revisions of the key
// space are contiguous up to FinalRev (only the clients write, one key per
// revision), so no checker below compares against a history with holes.
func checkTruth(r *Report, run *record.Run, truth *record.Truth) {
	evs := truth.Events()
	r.Checked["truth-events"] = len(evs)
	if !run.ContiguousTruth {
		return
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Rev > evs[i-1].Rev+1 {
			r.add(NothingLost, "etcd history has a gap between revisions %d and %d: the truth watch lost events", evs[i-1].Rev, evs[i].Rev)
		}
	}
	if n := len(evs); n > 0 && run.FinalRev > 0 && evs[n-1].Rev != run.FinalRev {
		r.add(NothingLost, "etcd history ends at %d, but etcd was at %d when traffic stopped", evs[n-1].Rev, run.FinalRev)
	}
}

// resolveWrites checks acknowledged writes against etcd's history and
// returns the ops with every Unknown write either resolved (applied, with
// its revision and an open-ended return) or dropped (never applied).
func resolveWrites(r *Report, run *record.Run, truth *record.Truth) []record.Op {
	ops := completedDeletions(run.Ops, truth)
	end := int64(0)
	for _, op := range ops {
		end = max(end, op.Return)
	}
	// An event is claimed by at most one write: acknowledged writes first,
	// so that an Unknown duplicate (two deletes with one precondition)
	// does not claim a revision another write owns.
	claimed := map[int64]bool{}
	for _, op := range ops {
		if op.IsWrite() && op.Out == record.OK {
			if applied, ev := appliedIn(truth, &op); applied && ev.Rev == op.RV {
				claimed[ev.Rev] = true
				if op.Kind == record.Delete {
					for _, s := range truth.SystemChain(op.Name, op.PreRV) {
						claimed[s.Rev] = true
					}
				}
			}
		}
	}
	// An Unknown write applied at revision r took effect before any write
	// acknowledged at a higher revision returned: its open return is
	// bounded by the earliest such return.
	type ack struct{ rev, ret int64 }
	var acks []ack
	for _, op := range ops {
		if op.IsWrite() && op.Out == record.OK {
			acks = append(acks, ack{op.RV, op.Return})
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].rev < acks[j].rev })
	for i := len(acks) - 2; i >= 0; i-- {
		acks[i].ret = min(acks[i].ret, acks[i+1].ret)
	}
	returnBound := func(rev, call int64) int64 {
		i := sort.Search(len(acks), func(i int) bool { return acks[i].rev > rev })
		if i == len(acks) {
			return end + 1
		}
		return max(acks[i].ret, call)
	}
	// A failed write whose effect is in etcd is a violation unless another
	// op made that change; judged once every op has claimed its own.
	type failed struct {
		op  record.Op
		rev int64
	}
	var failedApplied []failed
	// markings claims the system updates in chain as the DELETE op's
	// markings: each goes into out as an acknowledged update (its return
	// bounded as an Unknown write's is), and op's precondition moves to
	// the last of them.
	markings := func(op *record.Op, chain []record.TruthEvent, out []record.Op) []record.Op {
		for _, s := range chain {
			claimed[s.Rev] = true
			mark := *op
			mark.Kind, mark.Value, mark.Out, mark.Reason, mark.RV = record.Update, s.Value, record.OK, "", s.Rev
			if op.Out == record.Unknown {
				mark.Return = returnBound(s.Rev, op.Call)
			}
			out = append(out, mark)
			op.PreRV = s.Rev
		}
		return out
	}
	// conflicted indexes, in out, the DELETEs answered with a conflict.
	var conflicted []int
	out := make([]record.Op, 0, len(ops))
	for _, op := range ops {
		if !op.IsWrite() {
			out = append(out, op)
			continue
		}
		applied, ev := appliedIn(truth, &op)
		// owns: this op is the one that made ev (an Unknown op only if no
		// acknowledged op claimed it).
		owns := applied && ((op.Out == record.OK && ev.Rev == op.RV) || (op.Out == record.Unknown && !claimed[ev.Rev]))
		// A real kube-apiserver deletes a pod in two writes: it marks it
		// (deletionTimestamp) and then deletes it, both within the client's
		// request. The marking is an update in the model. A DELETE whose
		// outcome is unknown may have applied the marking only; one that
		// lost the race to an update of the marked version made only the
		// marking, and is nothing more.
		chain := truth.SystemChain(op.Name, op.PreRV)
		partial := !owns && op.Out == record.Unknown && len(chain) > 0 && !claimed[chain[0].Rev]
		lost := lostRaceToUpdate(op, applied, ev, chain, claimed)
		if (owns || partial || lost) && op.Kind == record.Delete {
			out = markings(&op, chain, out)
		}
		if lost {
			continue
		}
		switch op.Out {
		case record.OK:
			r.Checked["acknowledged-writes"]++
			if !applied {
				r.add(NothingLost, "op %d: %s %s acknowledged at revision %d is not in etcd's history", op.ID, op.Kind, op.Name, op.RV)
			} else if ev.Rev != op.RV {
				r.add(NothingLost, "op %d: %s %s acknowledged at revision %d, etcd applied it at %d", op.ID, op.Kind, op.Name, op.RV, ev.Rev)
			}
			out = append(out, op)
		case record.Failed:
			if applied {
				failedApplied = append(failedApplied, failed{op, ev.Rev})
			}
			if op.Kind == record.Delete && op.Reason == record.ReasonConflict {
				conflicted = append(conflicted, len(out))
			}
			out = append(out, op)
		case record.Unknown:
			if owns {
				claimed[ev.Rev] = true
				op.Out, op.RV, op.Return = record.OK, ev.Rev, returnBound(ev.Rev, op.Call)
				out = append(out, op)
			}
		}
	}
	// A DELETE answered with a conflict may have marked the pod all the
	// same: kube-apiserver marks it, and if the pod is deleted and created
	// again before its own delete is sent, that delete's precondition (the
	// marked version) fails on the new pod (genericregistry.Store.Delete).
	// Judged once every other op has claimed its own: a marking of the
	// DELETE's precondition that nobody else made is its.
	for _, i := range conflicted {
		chain := truth.SystemChain(out[i].Name, out[i].PreRV)
		if len(chain) == 0 || claimed[chain[0].Rev] {
			continue
		}
		op := out[i]
		out = markings(&op, chain, out)
		out[i] = op
	}
	for _, f := range failedApplied {
		if !claimed[f.rev] {
			r.add(NothingLost, "op %d: %s %s failed (%s) but etcd applied it at revision %d", f.op.ID, f.op.Kind, f.op.Name, f.op.Reason, f.rev)
		}
	}
	// Every change in etcd must come from some client's write; otherwise
	// the history misses an op and nothing above can be trusted.
	for _, e := range truth.Events() {
		if !claimed[e.Rev] {
			r.add(NothingLost, "etcd has a write no recorded operation explains: %s %s at revision %d (value %q)", eventType(e), e.Name, e.Rev, e.Value)
		}
	}
	return out
}

// completedDeletions returns ops with every update that finished a
// deletion turned into that deletion. Asked to update a pod that a DELETE
// has marked (deletionTimestamp, grace period 0, no finalizers), a real
// kube-apiserver deletes the pod instead, or finds it deleted, and answers
// with the object of the request at the revision the request named:
// nothing of the update is written (genericregistry.Store.Update and
// deleteWithoutFinalizers). So an update acknowledged at its own
// precondition's revision, a marking, is the deletion of that version,
// done before the update returned. Every other update is left alone: one
// that etcd did not apply stays a nothing-lost violation.
func completedDeletions(ops []record.Op, truth *record.Truth) []record.Op {
	var out []record.Op
	for i, op := range ops {
		if op.Kind == record.Delete && op.Out == record.OK && op.RV == op.PreRV && truth.Marked(op.Name, op.PreRV) {
			// A DELETE of a version already marked for deletion writes
			// nothing: kube-apiserver reads the pod (rv=""), sees the
			// deletion pending and answers with what it read
			// (genericregistry.Store.Delete, pendingGraceful). It is that
			// read.
			if out == nil {
				out = append([]record.Op(nil), ops...)
			}
			v, _ := truth.At(op.Name, op.PreRV)
			read := op
			read.Kind, read.Mode, read.PreRV = record.Get, record.Consistent, 0
			read.Found, read.Got = true, v.Value
			out[i] = read
			continue
		}
		if op.Kind != record.Update || op.Out != record.OK || op.RV != op.PreRV || !truth.Marked(op.Name, op.PreRV) {
			continue
		}
		del := op
		del.Kind, del.Value = record.Delete, ""
		applied, ev := appliedIn(truth, &del)
		if !applied {
			continue
		}
		del.RV = ev.Rev
		if out == nil {
			out = append([]record.Op(nil), ops...)
		}
		out[i] = del
	}
	if out == nil {
		return ops
	}
	return out
}

// lostRaceToUpdate reports whether an acknowledged DELETE made only the
// markings in chain (the system updates after its precondition) because
// an update of the marked version finished the deletion first.
// kube-apiserver marks the pod (deletionTimestamp, grace period 0), then
// deletes it; a client that read the marked version in between and sent
// an update deletes it instead (completedDeletions). The DELETE's own
// delete then finds nothing, and kube-apiserver answers success with the
// version it marked, whose resourceVersion it has cleared (0), or the one
// it started from (genericregistry.Store.Delete, ignoreNotFound). Every
// condition must hold: the deletion is another op's, there are markings
// and nobody else claimed them.
func lostRaceToUpdate(op record.Op, applied bool, ev record.TruthEvent, chain []record.TruthEvent, claimed map[int64]bool) bool {
	if op.Kind != record.Delete || op.Out != record.OK || !applied || ev.Rev == op.RV || !claimed[ev.Rev] {
		return false
	}
	if (op.RV != 0 && op.RV != op.PreRV) || len(chain) == 0 {
		return false
	}
	for _, s := range chain {
		if claimed[s.Rev] {
			return false
		}
	}
	return true
}

// appliedIn finds the event a write produced. Values are unique per write;
// a deletion is identified by the version its precondition named.
func appliedIn(truth *record.Truth, op *record.Op) (bool, record.TruthEvent) {
	switch op.Kind {
	case record.Create, record.Update:
		ev, ok := truth.ByValue(op.Value)
		if !ok || ev.Name != op.Name || (op.Kind == record.Create) != ev.Created {
			return false, ev
		}
		return true, ev
	case record.Delete:
		from := op.PreRV
		if chain := truth.SystemChain(op.Name, from); len(chain) > 0 {
			from = chain[len(chain)-1].Rev
		}
		ev, ok := truth.DeletionOf(op.Name, from)
		if !ok {
			return false, ev
		}
		// Two deletes with the same precondition: only one applied;
		// resolveWrites lets one claim the event.
		return true, ev
	}
	return false, record.TruthEvent{}
}

// checkFreshLists verifies that every consistent LIST's RV covers each write
// acknowledged before the LIST was called.
func checkFreshLists(r *Report, run *record.Run, ops []record.Op) {
	type ack struct{ ret, rev int64 }
	var acks []ack
	for i := range ops {
		if ops[i].IsWrite() && ops[i].Out == record.OK {
			acks = append(acks, ack{ops[i].Return, ops[i].RV})
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].ret < acks[j].ret })
	// prefix max of revisions by return time
	maxRev := make([]int64, len(acks))
	for i, a := range acks {
		maxRev[i] = a.rev
		if i > 0 {
			maxRev[i] = max(maxRev[i], maxRev[i-1])
		}
	}
	for i := range ops {
		op := &ops[i]
		if op.Kind != record.List || !consistentRead(run, op) {
			continue
		}
		r.Checked["consistent-lists"]++
		// acknowledged strictly before the call
		j := sort.Search(len(acks), func(k int) bool { return acks[k].ret >= op.Call })
		if j == 0 {
			continue
		}
		if need := maxRev[j-1]; op.RV < need {
			r.add(FreshList, "op %d: client %d %s LIST on cache %d returned RV %d, but a write acknowledged before the call was at revision %d",
				op.ID, op.Client, op.Mode, op.Cache, op.RV, need)
		}
	}
}

// checkReads compares every successful read with etcd's state at the RV it
// reports.
func checkReads(r *Report, run *record.Run, truth *record.Truth) {
	for i := range run.Ops {
		op := &run.Ops[i]
		if op.IsWrite() || op.Out != record.OK {
			continue
		}
		r.Checked["reads"]++
		if op.Kind == record.List && op.Mode == record.NotOlder && op.RV < op.MinRV {
			r.add(MatchesEtcd, "op %d: %s with rv=%d (NotOlderThan) returned RV %d", op.ID, op.Kind, op.MinRV, op.RV)
		}
		switch op.Kind {
		case record.Get:
			if !op.Found {
				continue
			}
			ev, ok := truth.At(op.Name, op.RV)
			if !ok || ev.Deleted || ev.Value != op.Got {
				r.add(MatchesEtcd, "op %d: GET %s returned value %q at modRev %d; etcd has %+v there", op.ID, op.Name, op.Got, op.RV, ev)
			}
		case record.List:
			want := map[string]record.TruthEvent{}
			for _, name := range truth.Names() {
				if ev, exists := truth.StateAt(name, op.RV); exists && (op.Node == "" || ev.Node == op.Node) {
					want[name] = ev
				}
			}
			got := map[string]record.Item{}
			for _, it := range op.Items {
				got[it.Name] = it
			}
			for name, ev := range want {
				it, ok := got[name]
				if !ok {
					r.add(MatchesEtcd, "op %d: client %d %s LIST (node %q) on cache %d at RV %d misses %s (value %q, modRev %d)", op.ID, op.Client, op.Mode, op.Node, op.Cache, op.RV, name, ev.Value, ev.Rev)
				} else if it.Value != ev.Value || it.ModRev != ev.Rev {
					r.add(MatchesEtcd, "op %d: client %d %s LIST (node %q) on cache %d at RV %d has %s value %q modRev %d; etcd: value %q modRev %d", op.ID, op.Client, op.Mode, op.Node, op.Cache, op.RV, name, it.Value, it.ModRev, ev.Value, ev.Rev)
				}
			}
			for name, it := range got {
				if _, ok := want[name]; !ok {
					r.add(MatchesEtcd, "op %d: client %d %s LIST (node %q) on cache %d at RV %d has %s (value %q, modRev %d), which etcd did not have then", op.ID, op.Client, op.Mode, op.Node, op.Cache, op.RV, name, it.Value, it.ModRev)
				}
			}
		}
	}
}
