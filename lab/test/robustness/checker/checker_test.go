package checker

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	h "github.com/freshcache/freshcache/lab/test/robustness/record"
)

// goodRun is a small, correct history: two pods, an update, a delete, reads
// and a watch that resumes after a bookmark. Each test breaks one thing.
func goodRun() *h.Run {
	return &h.Run{
		Keys:            []string{"a", "b"},
		ContiguousTruth: true,
		FinalRev:        6,
		Truth: []h.TruthEvent{
			{Rev: 2, Name: "a", Created: true, Value: "v1", Node: "n1"},
			{Rev: 3, Name: "b", Created: true, Value: "v2", Node: "n2"},
			{Rev: 4, Name: "a", Value: "v3", Node: "n1", PrevModRev: 2},
			{Rev: 5, Name: "b", Deleted: true, Value: "v2", Node: "n2", PrevModRev: 3},
			{Rev: 6, Name: "a", Value: "v4", Node: "n1", PrevModRev: 4},
		},
		Ops: []h.Op{
			{ID: 1, Client: 1, Kind: h.Create, Name: "a", Value: "v1", Node: "n1", Call: 10, Return: 20, Out: h.OK, RV: 2},
			{ID: 2, Client: 4, Kind: h.Create, Name: "b", Value: "v2", Node: "n2", Call: 11, Return: 21, Out: h.OK, RV: 3},
			{ID: 3, Client: 1, Kind: h.Update, Name: "a", Value: "v3", PreRV: 2, Call: 30, Return: 40, Out: h.OK, RV: 4},
			{ID: 4, Client: 4, Kind: h.Delete, Name: "b", PreRV: 3, Call: 50, Return: 60, Out: h.OK, RV: 5},
			{ID: 5, Client: 1, Kind: h.Update, Name: "a", Value: "v4", PreRV: 4, Call: 70, Return: 80, Out: h.OK, RV: 6},
			{ID: 6, Client: 2, Kind: h.List, Mode: h.Consistent, Call: 41, Return: 45, Out: h.OK, RV: 4,
				Items: []h.Item{{Name: "a", Value: "v3", Node: "n1", ModRev: 4}, {Name: "b", Value: "v2", Node: "n2", ModRev: 3}}},
			{ID: 7, Client: 2, Kind: h.Get, Mode: h.Consistent, Name: "a", Call: 81, Return: 85, Out: h.OK, Found: true, Got: "v4", RV: 6},
			{ID: 8, Client: 2, Cache: 1, Kind: h.List, Mode: h.Zero, Call: 90, Return: 95, Out: h.OK, RV: 6,
				Items: []h.Item{{Name: "a", Value: "v4", Node: "n1", ModRev: 6}}},
			{ID: 9, Client: 2, Kind: h.List, Mode: h.Consistent, Node: "n2", Call: 96, Return: 97, Out: h.OK, RV: 6},
		},
		Sessions: []h.WatchSession{
			{Watcher: 3, StartRV: 1, Start: 1, End: 46, Events: []h.WatchEvent{
				{Type: h.Added, Name: "a", RV: 2, Value: "v1"},
				{Type: h.Added, Name: "b", RV: 3, Value: "v2"},
				{Type: h.Modified, Name: "a", RV: 4, Value: "v3"},
				{Type: h.Bookmark, RV: 4},
			}},
			{Watcher: 3, Cache: 1, StartRV: 4, Start: 47, End: 100, Events: []h.WatchEvent{
				{Type: h.Deleted, Name: "b", RV: 5, Value: "v2"},
				{Type: h.Modified, Name: "a", RV: 6, Value: "v4"},
			}},
		},
	}
}

func check(t *testing.T, run *h.Run) *Report {
	t.Helper()
	return Check(run, Options{})
}

// expectOnly asserts that checker want (and only the checkers in also)
// reported violations.
func expectOnly(t *testing.T, r *Report, want string, also ...string) {
	t.Helper()
	if r.Counts[want] == 0 {
		t.Errorf("%s found nothing; want a violation. Report: %v", want, r.Details)
	}
	allowed := map[string]bool{want: true}
	for _, a := range also {
		allowed[a] = true
	}
	for _, n := range Names {
		if !allowed[n] && r.Counts[n] > 0 {
			t.Errorf("unexpected %s violations: %v", n, r.Details[n])
		}
	}
	for _, d := range r.Details[want] {
		t.Logf("%s: %s", want, d)
	}
}

func TestGoodRunHasNoViolations(t *testing.T) {
	r := check(t, goodRun())
	if r.Total() != 0 {
		t.Fatalf("violations on a correct history: %v", r.Details)
	}
	if r.Porcupine == nil || r.Porcupine.Result != porcupine.Ok {
		t.Fatalf("porcupine: %+v", r.Porcupine)
	}
}

func TestReorderedWatchIsReported(t *testing.T) {
	run := goodRun()
	ev := run.Sessions[0].Events
	ev[1], ev[2] = ev[2], ev[1] // b@3 after a@4
	expectOnly(t, check(t, run), WatchOrdered, WatchReliable, TimeTravel)
}

func TestWatchGapIsReported(t *testing.T) {
	run := goodRun()
	s := &run.Sessions[0]
	s.Events = append(s.Events[:1], s.Events[2:]...) // b@3 never delivered
	expectOnly(t, check(t, run), WatchReliable)
}

func TestDuplicateWatchEventIsReported(t *testing.T) {
	run := goodRun()
	s := &run.Sessions[1]
	s.Events = append(s.Events, s.Events[1]) // a@6 twice
	expectOnly(t, check(t, run), WatchUnique)
}

func TestBookmarkBeforeItsEventsIsReported(t *testing.T) {
	run := goodRun()
	s := &run.Sessions[0]
	s.Events[3].RV = 5 // claims progress past b's deletion at 5...
	run.Sessions[1].StartRV = 5
	run.Sessions[1].Events = run.Sessions[1].Events[1:] // ...which never came
	expectOnly(t, check(t, run), WatchBookmarkable)
}

func TestResumeThatSkipsEventsIsReported(t *testing.T) {
	run := goodRun()
	run.Sessions[1].Events = run.Sessions[1].Events[1:] // resumed at 4, first event 6
	expectOnly(t, check(t, run), WatchResumable)
}

func TestResumeFromWrongRVIsReported(t *testing.T) {
	run := goodRun()
	run.Sessions[1].StartRV = 5
	run.Sessions[1].Events = run.Sessions[1].Events[1:]
	expectOnly(t, check(t, run), WatchResumable)
}

func TestWatchEventNotInEtcdIsReported(t *testing.T) {
	run := goodRun()
	run.Sessions[1].Events[1].Value = "v9"
	expectOnly(t, check(t, run), WatchMatchesEtcd)
}

func TestSplitRevisionIsReported(t *testing.T) {
	run := goodRun()
	// Revision 7 is one transaction over two keys; the watch gets half.
	run.Truth = append(run.Truth,
		h.TruthEvent{Rev: 7, Name: "c", Created: true, Value: "v5"},
		h.TruthEvent{Rev: 7, Name: "d", Created: true, Value: "v6"})
	run.FinalRev = 7
	s := &run.Sessions[1]
	s.Events = append(s.Events, h.WatchEvent{Type: h.Added, Name: "c", RV: 7, Value: "v5"})
	// No client op can write two keys at once, so nothing-lost also flags
	// the transaction; this test is about the watch.
	expectOnly(t, check(t, run), WatchAtomic, NothingLost)
}

// A client reads rv=0 from the fresh cache, then from the lagging one and
// gets an older state: kubernetes#59848. The old state is a true snapshot
// of etcd (matches-etcd stays quiet); only time-travel catches it.
func TestStaleListAfterFresherOneIsTimeTravel(t *testing.T) {
	run := goodRun()
	run.Ops = append(run.Ops, h.Op{ID: 10, Client: 2, Cache: 0, Kind: h.List, Mode: h.Zero, Call: 98, Return: 99, Out: h.OK, RV: 4,
		Items: []h.Item{{Name: "a", Value: "v3", Node: "n1", ModRev: 4}, {Name: "b", Value: "v2", Node: "n2", ModRev: 3}}})
	r := check(t, run)
	expectOnly(t, r, TimeTravel)
	if !strings.Contains(r.Details[TimeTravel][0], "RV 4 after the client observed RV 6") {
		t.Errorf("detail does not explain the travel: %q", r.Details[TimeTravel][0])
	}
}

func TestStaleGetIsTimeTravel(t *testing.T) {
	run := goodRun()
	run.Ops = append(run.Ops, h.Op{ID: 10, Client: 2, Kind: h.Get, Mode: h.Zero, Name: "a", Call: 98, Return: 99, Out: h.OK, Found: true, Got: "v3", RV: 4})
	expectOnly(t, check(t, run), TimeTravel)
}

// The probe of the isolation fault: the client created a pod through one
// apiserver; the lagging one says it does not exist.
func TestNotFoundAfterOwnCreateIsTimeTravel(t *testing.T) {
	run := goodRun()
	run.Ops = append(run.Ops, h.Op{ID: 10, Client: 1, Cache: 1, Kind: h.Get, Mode: h.Zero, Name: "a", Call: 98, Return: 99, Out: h.OK})
	expectOnly(t, check(t, run), TimeTravel)
}

// A relist after a 410 that lands before the events the watcher saw.
func TestWatcherRelistIntoThePastIsTimeTravel(t *testing.T) {
	run := goodRun()
	run.Ops = append(run.Ops, h.Op{ID: 10, Client: 3, Kind: h.List, Mode: h.Zero, Call: 101, Return: 102, Out: h.OK, RV: 4,
		Items: []h.Item{{Name: "a", Value: "v3", Node: "n1", ModRev: 4}, {Name: "b", Value: "v2", Node: "n2", ModRev: 3}}})
	expectOnly(t, check(t, run), TimeTravel)
}

// A consistent LIST called after the update of a was acknowledged returns
// the state from before it.
func TestStaleConsistentListIsNotLinearizable(t *testing.T) {
	run := goodRun()
	run.Ops[5].Call = 41
	run.Ops[5].RV = 3
	run.Ops[5].Items = []h.Item{{Name: "a", Value: "v1", Node: "n1", ModRev: 2}, {Name: "b", Value: "v2", Node: "n2", ModRev: 3}}
	r := check(t, run)
	expectOnly(t, r, Linearizability, FreshList)
	if r.Counts[FreshList] == 0 {
		t.Errorf("fresh-list missed the stale list")
	}
	if r.Porcupine.Result != porcupine.Illegal {
		t.Errorf("porcupine says %s", r.Porcupine.Result)
	}
}

func TestStaleConsistentGetIsNotLinearizable(t *testing.T) {
	run := goodRun()
	run.Ops[6].Got, run.Ops[6].RV = "v3", 4 // called after the update to v4 returned
	expectOnly(t, check(t, run), Linearizability)
}

func TestListThatIsNoSnapshotIsReported(t *testing.T) {
	run := goodRun()
	run.Ops[7].Items = append(run.Ops[7].Items, h.Item{Name: "b", Value: "v2", Node: "n2", ModRev: 3}) // b was deleted at 5
	expectOnly(t, check(t, run), MatchesEtcd)
}

func TestAcknowledgedWriteMissingFromEtcdIsLost(t *testing.T) {
	run := goodRun()
	run.Ops = append(run.Ops, h.Op{ID: 10, Client: 1, Kind: h.Update, Name: "a", Value: "v7", PreRV: 6, Call: 86, Return: 87, Out: h.OK, RV: 7})
	expectOnly(t, check(t, run), NothingLost, Linearizability, FreshList)
}

func TestTruthWithAGapIsReported(t *testing.T) {
	run := goodRun()
	run.FinalRev = 8
	run.Truth = append(run.Truth, h.TruthEvent{Rev: 8, Name: "a", Value: "v8", Node: "n1", PrevModRev: 6})
	run.Ops = append(run.Ops, h.Op{ID: 10, Client: 1, Kind: h.Update, Name: "a", Value: "v8", PreRV: 6, Call: 98, Return: 99, Out: h.OK, RV: 8})
	r := check(t, run)
	expectOnly(t, r, NothingLost)
	if r.Counts[NothingLost] != 1 {
		t.Errorf("want exactly the gap reported: %v", r.Details[NothingLost])
	}
}

// A write in etcd that no recorded op explains (the recorder lost an op).
func TestUnexplainedWriteIsReported(t *testing.T) {
	run := goodRun()
	run.Ops = append(run.Ops[:3], run.Ops[4:]...) // the delete of b is not recorded
	expectOnly(t, check(t, run), NothingLost, Linearizability)
}

// deleteBInTwoSteps rewrites goodRun's truth as kube-apiserver deletes b:
// rev 5 only marks it (same value, a new modRevision) and b is deleted
// for good at rev 7. The truth is no longer taken as contiguous.
func deleteBInTwoSteps(run *h.Run) {
	run.ContiguousTruth = false
	for i := range run.Truth {
		if run.Truth[i].Rev == 5 {
			run.Truth[i] = h.TruthEvent{Rev: 5, Name: "b", Value: "v2", Node: "n2", PrevModRev: 3}
		}
	}
	run.Truth = append(run.Truth, h.TruthEvent{Rev: 7, Name: "b", Deleted: true, Value: "v2", Node: "n2", PrevModRev: 5})
}

// kube-apiserver deletes a pod in two writes (mark, then delete), both
// inside the client's DELETE; reads may see the marked version.
func TestTwoStepDeleteIsOneOperation(t *testing.T) {
	run := goodRun()
	deleteBInTwoSteps(run)
	run.Ops[3].RV = 7
	run.Ops[3].Return = 65
	run.Ops[6].Call = 66  // the get of a after the delete returned
	run.Ops = run.Ops[:7] // reads after that would need the new revisions
	run.Ops = append(run.Ops, h.Op{ID: 20, Client: 2, Kind: h.Get, Mode: h.Consistent, Name: "b", Call: 52, Return: 58, Out: h.OK, Found: true, Got: "v2", RV: 5})
	run.Sessions[1].Events = []h.WatchEvent{
		{Type: h.Modified, Name: "b", RV: 5, Value: "v2"},
		{Type: h.Modified, Name: "a", RV: 6, Value: "v4"},
		{Type: h.Deleted, Name: "b", RV: 7, Value: "v2"},
	}
	if r := check(t, run); r.Total() != 0 {
		t.Fatalf("violations: %v", r.Details)
	}
}

// A DELETE that timed out after kube-apiserver marked the pod but before
// it deleted it; a second DELETE finishes the job.
func TestHalfAppliedDeleteIsResolved(t *testing.T) {
	run := goodRun()
	deleteBInTwoSteps(run)
	run.Ops[3] = h.Op{ID: 4, Client: 4, Kind: h.Delete, Name: "b", PreRV: 3, Call: 50, Return: 60, Out: h.Unknown, Err: "timeout"}
	run.Ops = run.Ops[:6] // keep writes and the first list
	run.Ops = append(run.Ops,
		h.Op{ID: 20, Client: 5, Kind: h.Delete, Name: "b", PreRV: 3, Call: 51, Return: 61, Out: h.Unknown, Err: "timeout"},
		h.Op{ID: 21, Client: 4, Kind: h.Delete, Name: "b", PreRV: 5, Call: 81, Return: 90, Out: h.OK, RV: 7})
	run.Sessions = run.Sessions[:1]
	if r := check(t, run); r.Total() != 0 {
		t.Fatalf("violations: %v", r.Details)
	}
}

// markedRun is goodRun with b's deletion left half done: a DELETE (op 4)
// timed out after kube-apiserver marked b (rev 5), and b is deleted at
// rev 7, after a's update. update is an update of b that a client sent
// with the marked version as its precondition; each test says how it was
// answered.
func markedRun(update h.Op) *h.Run {
	run := goodRun()
	run.FinalRev = 7
	deleteBInTwoSteps(run)
	run.Ops[3].Out, run.Ops[3].RV, run.Ops[3].Err = h.Unknown, 0, "timeout"
	run.Ops[7].Items = append(run.Ops[7].Items, h.Item{Name: "b", Value: "v2", Node: "n2", ModRev: 5})
	run.Ops[8].RV = 7
	run.Ops = append(run.Ops, update)
	run.Sessions[1].Events = []h.WatchEvent{
		{Type: h.Modified, Name: "b", RV: 5, Value: "v2"},
		{Type: h.Modified, Name: "a", RV: 6, Value: "v4"},
		{Type: h.Deleted, Name: "b", RV: 7, Value: "v2"},
	}
	return run
}

// An update of a pod a DELETE has marked deletes it: kube-apiserver
// answers with the request's object at the marked revision, and writes
// nothing of the update. It is the deletion at rev 7.
func TestUpdateOfAMarkedPodIsItsDeletion(t *testing.T) {
	run := markedRun(h.Op{ID: 20, Client: 5, Kind: h.Update, Name: "b", Value: "v9", PreRV: 5, Call: 86, Return: 89, Out: h.OK, RV: 5})
	if r := check(t, run); r.Total() != 0 {
		t.Fatalf("violations: %v", r.Details)
	}
}

// A DELETE marks b (rev 5); before its own delete is sent, a client that
// read the marked version updates it, and kube-apiserver answers that
// update by deleting b (rev 7). The DELETE's delete finds nothing, and it
// is answered with success and the marked version, its resourceVersion
// cleared. The DELETE made the marking, the update the deletion.
func TestDeleteThatLostTheRaceToAnUpdateMadeTheMarking(t *testing.T) {
	run := markedRun(h.Op{ID: 20, Client: 5, Kind: h.Update, Name: "b", Value: "v9", PreRV: 5, Call: 52, Return: 59, Out: h.OK, RV: 5})
	run.Ops[3].Out, run.Ops[3].RV, run.Ops[3].Err = h.OK, 0, ""
	run.Ops[3].Return = 62
	if r := check(t, run); r.Total() != 0 {
		t.Fatalf("violations: %v", r.Details)
	}
	// Without the update that finished it, the same answer is a lost
	// deletion: nobody explains rev 7.
	run.Ops = run.Ops[:len(run.Ops)-1]
	if r := check(t, run); r.Counts[NothingLost] == 0 {
		t.Fatalf("nothing-lost found nothing: %v", r.Details)
	}
}

// A DELETE whose precondition names a version already marked for
// deletion writes nothing: kube-apiserver reads the marked pod and
// answers with it. It is a read of rev 5; the first DELETE deleted b.
// Answered so with a version that is not marked, it is a lost write.
func TestDeleteOfAMarkedVersionIsARead(t *testing.T) {
	run := markedRun(h.Op{ID: 20, Client: 5, Kind: h.Delete, Name: "b", PreRV: 5, Call: 52, Return: 58, Out: h.OK, RV: 5})
	run.Ops[3].Out, run.Ops[3].RV, run.Ops[3].Err = h.OK, 7, ""
	run.Ops[3].Return = 87
	if r := check(t, run); r.Total() != 0 {
		t.Fatalf("violations: %v", r.Details)
	}
	run.Ops[len(run.Ops)-1] = h.Op{ID: 20, Client: 5, Kind: h.Delete, Name: "a", PreRV: 4, Call: 52, Return: 58, Out: h.OK, RV: 4}
	if r := check(t, run); r.Counts[NothingLost] == 0 {
		t.Fatalf("nothing-lost found nothing: %v", r.Details)
	}
}

// A DELETE marks b (rev 5); an update of the marked version deletes it
// (rev 7) and a create makes b again (rev 8), all before the DELETE's own
// delete is sent. That delete's precondition, the marked version, fails
// on the new b, and kube-apiserver answers the DELETE with a conflict
// (genericregistry.Store.Delete). The DELETE made the marking; a conflict
// from a DELETE whose precondition nothing marked explains nothing.
func TestConflictedDeleteMadeTheMarking(t *testing.T) {
	for _, tc := range []struct {
		name  string
		preRV int64
		lost  bool
	}{
		{"marked its precondition", 3, false},
		{"precondition nothing marked", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := markedRun(h.Op{ID: 20, Client: 5, Kind: h.Update, Name: "b", Value: "v9", PreRV: 5, Call: 86, Return: 89, Out: h.OK, RV: 5})
			run.FinalRev = 8
			run.Truth = append(run.Truth, h.TruthEvent{Rev: 8, Name: "b", Created: true, Value: "v10", Node: "n2"})
			run.Ops = append(run.Ops, h.Op{ID: 21, Client: 6, Kind: h.Create, Name: "b", Value: "v10", Node: "n2", Call: 98, Return: 99, Out: h.OK, RV: 8})
			run.Sessions[1].Events = append(run.Sessions[1].Events, h.WatchEvent{Type: h.Added, Name: "b", RV: 8, Value: "v10"})
			d := &run.Ops[3]
			d.PreRV, d.Out, d.Reason, d.Err, d.RV, d.Return = tc.preRV, h.Failed, h.ReasonConflict, "conflict", 0, 100
			r := check(t, run)
			if !tc.lost {
				if r.Total() != 0 {
					t.Fatalf("violations: %v", r.Details)
				}
				return
			}
			if r.Counts[NothingLost] == 0 {
				t.Fatalf("nothing-lost found nothing: %v", r.Details)
			}
			for _, s := range r.Details[NothingLost] {
				if !strings.Contains(s, "MODIFIED b at revision 5") {
					t.Errorf("unexpected nothing-lost: %s", s)
				}
			}
		})
	}
}

// Only an answer at the marked revision is a deletion: the same update
// acknowledged at a revision of its own, or at the revision of a version
// nothing marked, was lost.
func TestLostUpdateIsNotADeletion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		update h.Op
	}{
		{"new revision", h.Op{ID: 20, Client: 5, Kind: h.Update, Name: "b", Value: "v9", PreRV: 5, Call: 86, Return: 89, Out: h.OK, RV: 8}},
		{"unmarked version", h.Op{ID: 20, Client: 5, Kind: h.Update, Name: "a", Value: "v9", PreRV: 6, Call: 86, Return: 89, Out: h.OK, RV: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, markedRun(tc.update))
			if r.Counts[NothingLost] == 0 {
				t.Fatalf("nothing-lost found nothing: %v", r.Details)
			}
			for _, d := range r.Details[NothingLost] {
				if !strings.Contains(d, "op 20:") {
					t.Errorf("unexpected nothing-lost: %s", d)
				}
			}
		})
	}
}

// Writes whose outcome the client never learned are resolved from etcd's
// history: applied ones count, the others are dropped.
func TestUnknownWritesAreResolved(t *testing.T) {
	run := goodRun()
	run.Ops[4].Out, run.Ops[4].RV, run.Ops[4].Err = h.Unknown, 0, "context deadline exceeded"
	run.Ops = append(run.Ops, h.Op{ID: 10, Client: 4, Kind: h.Update, Name: "a", Value: "never", PreRV: 6, Call: 86, Return: 87, Out: h.Unknown})
	if r := check(t, run); r.Total() != 0 {
		t.Fatalf("violations: %v", r.Details)
	}
}

// With tiny segments the history is cut at every quiescent point; each
// segment is seeded from etcd's history, so verdicts do not change.
func TestSegmentsKeepVerdicts(t *testing.T) {
	defer func(n int) { SegmentOps = n }(SegmentOps)
	SegmentOps = 1
	r := check(t, goodRun())
	if r.Total() != 0 {
		t.Fatalf("violations on a correct history: %v", r.Details)
	}
	if r.Porcupine.Segments <= 2 {
		t.Fatalf("%d segments; the test wants the history cut", r.Porcupine.Segments)
	}
	run := goodRun()
	run.Ops[6].Got, run.Ops[6].RV = "v3", 4 // stale consistent GET, late in the history
	expectOnly(t, check(t, run), Linearizability)
}

// An rv=0 read under a staleness bound may miss a write acknowledged less
// than the bound before it was called, and no more.
func TestBoundedZeroReadIsCheckedAgainstItsBound(t *testing.T) {
	zeroGet := func(staleness int64) *h.Run {
		run := goodRun()
		run.RV0Consistent, run.RV0Staleness = true, staleness
		// Called 2 ns after the update to v4 was acknowledged, it still
		// shows v3.
		run.Ops = append(run.Ops, h.Op{ID: 10, Client: 5, Kind: h.Get, Mode: h.Zero, Name: "a", Call: 82, Return: 86, Out: h.OK, Found: true, Got: "v3", RV: 4})
		return run
	}
	if r := check(t, zeroGet(5)); len(r.Details) != 0 {
		t.Errorf("a read 2 ns behind with a 5 ns bound was reported: %v", r.Details)
	}
	r := check(t, zeroGet(1))
	expectOnly(t, r, Linearizability, TimeTravel)
	strict := zeroGet(0)
	expectOnly(t, check(t, strict), Linearizability, TimeTravel)
	if strict.Ops[len(strict.Ops)-1].Call != 82 {
		t.Errorf("Check changed the run it was given")
	}
}

// The same holds for the client's own writes: under a bound, an rv=0 read
// on another cache may miss the client's write acknowledged less than the
// bound before the read's call (the isolation probe writes through one
// cache, then reads the other at once), and a read called later may not.
func TestBoundedZeroReadAfterOwnWrite(t *testing.T) {
	ownZeroGet := func(staleness int64) *h.Run {
		run := goodRun()
		run.RV0Consistent, run.RV0Staleness = true, staleness
		// Client 1's update to v4 (RV 6) returned at 80; 2 ns later it
		// reads a on cache 1 and gets v3.
		run.Ops = append(run.Ops, h.Op{ID: 10, Client: 1, Cache: 1, Kind: h.Get, Mode: h.Zero, Name: "a", Call: 82, Return: 86, Out: h.OK, Found: true, Got: "v3", RV: 4})
		return run
	}
	if r := check(t, ownZeroGet(5)); len(r.Details) != 0 {
		t.Errorf("a read 2 ns behind the client's own write with a 5 ns bound was reported: %v", r.Details)
	}
	r := check(t, ownZeroGet(1))
	expectOnly(t, r, Linearizability, TimeTravel)
	if !strings.Contains(r.Details[TimeTravel][0], "after the client observed RV 6 (own update op 5)") {
		t.Errorf("detail does not name the client's write: %q", r.Details[TimeTravel][0])
	}
	expectOnly(t, check(t, ownZeroGet(0)), Linearizability, TimeTravel)
}
