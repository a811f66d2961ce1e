package checker

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// PorcupineResult is the outcome of the porcupine check.
type PorcupineResult struct {
	// Result is Illegal if any segment is, else Unknown if porcupine gave
	// up on any, else Ok.
	Result porcupine.CheckResult
	// Ops is the number of key operations checked, in Segments segments.
	Ops, Segments int
	// Failures are the segments porcupine did not accept, with what the
	// HTML visualization needs.
	Failures []SegmentFailure
}

// SegmentFailure is one rejected (or undecided) segment of one key.
type SegmentFailure struct {
	Name   string
	Result porcupine.CheckResult
	Model  porcupine.Model
	Info   porcupine.LinearizationInfo
	Ops    []porcupine.Operation
}

// PorcupineTimeout bounds the porcupine search of one segment. A timeout is
// reported as a linearizability violation: an unchecked history proves
// nothing.
var PorcupineTimeout = 2 * time.Minute

// SegmentOps is the size from which a key's history is cut at the next
// quiescent point (no operation in flight). porcupine's memory grows with
// the square of a partition's length; segments keep long runs checkable.
var SegmentOps = 2000

// keyState is the model's state of one key.
type keyState struct {
	Exists bool
	Value  string
	Node   string
	ModRev int64
}

// keyInput is one operation on one key; LISTs are projected onto each key
// of the key space as reads (restricted to a node for LISTs by node).
type keyInput struct {
	Name   string
	Kind   record.Kind
	Value  string
	Node   string // create: the pod's node; read: the node filter
	PreRV  int64
	OpID   int
	Client int
}

type keyOutput struct {
	Out    record.Outcome
	Reason string
	RV     int64 // write revision
	Found  bool
	Value  string
	ModRev int64
}

// Model is the per-key sequential specification of the pod key space as
// the storage.Interface exposes it.
var Model = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var names []string
		for _, op := range ops {
			n := op.Input.(keyInput).Name
			if _, ok := by[n]; !ok {
				names = append(names, n)
			}
			by[n] = append(by[n], op)
		}
		sort.Strings(names)
		out := make([][]porcupine.Operation, 0, len(names))
		for _, n := range names {
			out = append(out, by[n])
		}
		return out
	},
	Init: func() any { return keyState{} },
	Step: func(st, in, out any) (bool, any) {
		s, i, o := st.(keyState), in.(keyInput), out.(keyOutput)
		return step(s, i, o)
	},
	Equal: func(a, b any) bool { return a.(keyState) == b.(keyState) },
	DescribeOperation: func(in, out any) string {
		i, o := in.(keyInput), out.(keyOutput)
		switch i.Kind {
		case record.Create:
			return fmt.Sprintf("op%d create(%s=%s@%s) -> %s%s rv=%d", i.OpID, i.Name, i.Value, i.Node, o.Out, o.Reason, o.RV)
		case record.Update:
			return fmt.Sprintf("op%d update(%s=%s if rv=%d) -> %s%s rv=%d", i.OpID, i.Name, i.Value, i.PreRV, o.Out, o.Reason, o.RV)
		case record.Delete:
			return fmt.Sprintf("op%d delete(%s if rv=%d) -> %s%s rv=%d", i.OpID, i.Name, i.PreRV, o.Out, o.Reason, o.RV)
		default:
			if !o.Found {
				return fmt.Sprintf("op%d %s(%s node=%q) -> absent", i.OpID, i.Kind, i.Name, i.Node)
			}
			return fmt.Sprintf("op%d %s(%s node=%q) -> %s@%d", i.OpID, i.Kind, i.Name, i.Node, o.Value, o.ModRev)
		}
	},
	DescribeState: func(st any) string {
		s := st.(keyState)
		if !s.Exists {
			return fmt.Sprintf("absent (rev %d)", s.ModRev)
		}
		return fmt.Sprintf("%s on %s @%d", s.Value, s.Node, s.ModRev)
	},
}

func step(s keyState, i keyInput, o keyOutput) (bool, keyState) {
	matches := s.Exists && s.ModRev == i.PreRV
	switch i.Kind {
	case record.Create:
		switch {
		case o.Out == record.OK:
			return !s.Exists && o.RV > s.ModRev, keyState{Exists: true, Value: i.Value, Node: i.Node, ModRev: o.RV}
		case o.Reason == record.ReasonExists:
			return s.Exists, s
		default:
			return true, s
		}
	case record.Update, record.Delete:
		switch {
		case o.Out == record.OK:
			next := keyState{ModRev: o.RV} // deleted: only the revision stays
			if i.Kind == record.Update {
				next = keyState{Exists: true, Value: i.Value, Node: s.Node, ModRev: o.RV}
			}
			return matches && o.RV > s.ModRev, next
		case o.Reason == record.ReasonNotFound:
			return !s.Exists, s
		case o.Reason == record.ReasonConflict:
			return s.Exists && !matches, s
		default:
			return true, s
		}
	default: // Get, or a List projected onto this key
		visible := s.Exists && (i.Node == "" || s.Node == i.Node)
		if !o.Found {
			return !visible, s
		}
		return visible && o.Value == s.Value && o.ModRev == s.ModRev, s
	}
}

// checkLinearizable runs porcupine over the resolved writes and the
// consistent reads, key by key, in segments.
//
// A key's history is cut where no operation is in flight, once a segment
// has SegmentOps operations. Every operation before the cut returned before
// every operation after it was called, so any linearization of the whole
// orders the two parts, and the state at the cut is that of the successful
// write with the highest revision before it (the model makes successful
// writes of a key linearize in revision order). That state, read from
// etcd's history, seeds the next segment. Writes are checked against etcd's
// history by nothing-lost, so the seed is what the writes produced.
func checkLinearizable(r *Report, run *record.Run, ops []record.Op, truth *record.Truth) *PorcupineResult {
	byKey := map[string][]porcupine.Operation{}
	add := func(op *record.Op, in keyInput, out keyOutput) {
		in.OpID, in.Client = op.ID, op.Client
		byKey[in.Name] = append(byKey[in.Name], porcupine.Operation{ClientId: op.Client, Input: in, Output: out, Call: op.Call, Return: op.Return})
	}
	for i := range ops {
		op := &ops[i]
		switch {
		case op.IsWrite():
			if op.Out == record.Unknown {
				continue // resolveWrites dropped or resolved these
			}
			add(op, keyInput{Name: op.Name, Kind: op.Kind, Value: op.Value, Node: op.Node, PreRV: op.PreRV},
				keyOutput{Out: op.Out, Reason: op.Reason, RV: op.RV})
		case !consistentRead(run, op):
		case op.Kind == record.Get:
			add(op, keyInput{Name: op.Name, Kind: record.Get}, keyOutput{Out: op.Out, Found: op.Found, Value: op.Got, ModRev: op.RV})
		case op.Kind == record.List:
			got := map[string]record.Item{}
			for _, it := range op.Items {
				got[it.Name] = it
			}
			for _, name := range run.Keys {
				it, found := got[name]
				add(op, keyInput{Name: name, Kind: record.List, Node: op.Node},
					keyOutput{Out: op.Out, Found: found, Value: it.Value, ModRev: it.ModRev})
			}
		}
	}
	names := make([]string, 0, len(byKey))
	total := 0
	for n, kops := range byKey {
		names = append(names, n)
		total += len(kops)
	}
	sort.Strings(names)
	r.Checked["porcupine-operations"] = total
	if total == 0 {
		return nil
	}
	res := &PorcupineResult{Result: porcupine.Ok, Ops: total}
	for _, name := range names {
		for _, seg := range segments(byKey[name], truth, name) {
			res.Segments++
			m := Model
			m.Partition, m.PartitionEvent = nil, nil
			seed := seg.seed
			m.Init = func() any { return seed }
			verdict := porcupine.CheckOperationsTimeout(m, seg.ops, PorcupineTimeout)
			if verdict == porcupine.Ok {
				continue
			}
			// Recheck verbosely for the visualization; the segment is small.
			_, info := porcupine.CheckOperationsVerbose(m, seg.ops, PorcupineTimeout)
			res.Failures = append(res.Failures, SegmentFailure{Name: name, Result: verdict, Model: m, Info: info, Ops: seg.ops})
			if verdict == porcupine.Illegal {
				res.Result = porcupine.Illegal
				r.add(Linearizability, "porcupine: the history of %s is not linearizable between %d and %d ns (%d operations; see linearizability-%s-*.html)", name, seg.ops[0].Call, seg.end, len(seg.ops), name)
			} else {
				if res.Result == porcupine.Ok {
					res.Result = porcupine.Unknown
				}
				r.add(Linearizability, "porcupine: no verdict within %v on %s between %d and %d ns (%d operations)", PorcupineTimeout, name, seg.ops[0].Call, seg.end, len(seg.ops))
			}
		}
	}
	r.Checked["porcupine-segments"] = res.Segments
	return res
}

type segment struct {
	ops  []porcupine.Operation
	seed keyState
	end  int64
}

// segments cuts one key's operations at quiescent points (see
// checkLinearizable) and seeds each segment with the state etcd had after
// the previous segment's last successful write.
func segments(ops []porcupine.Operation, truth *record.Truth, name string) []segment {
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var out []segment
	seed := keyState{}
	start := 0
	maxRet := int64(math.MinInt64)
	for i := range ops {
		maxRet = max(maxRet, ops[i].Return)
		if i+1 < len(ops) && (i+1-start < SegmentOps || maxRet >= ops[i+1].Call) {
			continue
		}
		seg := segment{ops: ops[start : i+1], seed: seed, end: maxRet}
		out = append(out, seg)
		var last int64
		for _, op := range seg.ops {
			in, o := op.Input.(keyInput), op.Output.(keyOutput)
			if (in.Kind == record.Create || in.Kind == record.Update || in.Kind == record.Delete) && o.Out == record.OK {
				last = max(last, o.RV)
			}
		}
		if last > 0 {
			if ev, exists := truth.StateAt(name, last); exists {
				seed = keyState{Exists: true, Value: ev.Value, Node: ev.Node, ModRev: ev.Rev}
			} else {
				seed = keyState{ModRev: ev.Rev}
			}
		}
		start = i + 1
	}
	return out
}
