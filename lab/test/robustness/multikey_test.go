package robustness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/freshcache/freshcache/lab/internal/tcptest"
	"github.com/freshcache/freshcache/lab/test/robustness/checker"
	h "github.com/freshcache/freshcache/lab/test/robustness/record"
)

// multiKeyRun is a correct history as txn.go and lease.go record it: a
// transaction updating a, deleting b and creating c at revision 4; a lease
// whose transaction creates l1 and l2 at 5 and whose expiry deletes both
// at 6; a transaction failing its compares; lists and a watch that see
// each revision whole.
func multiKeyRun() *h.Run {
	txn := func(id int, kind h.Kind, name, value, node string, pre int64) h.Op {
		return h.Op{ID: id, Client: 2, Kind: kind, Name: name, Value: value, Node: node, PreRV: pre, Call: 31, Return: 40, Out: h.OK, RV: 4, Batch: h.BatchTxn, BatchID: 1}
	}
	return &h.Run{
		Keys:            []string{"a", "b", "c", "d", "l1", "l2"},
		ContiguousTruth: true,
		FinalRev:        6,
		Truth: []h.TruthEvent{
			{Rev: 2, Name: "a", Created: true, Value: "v1", Node: "n1"},
			{Rev: 3, Name: "b", Created: true, Value: "v2", Node: "n2"},
			{Rev: 4, Name: "a", Value: "v3", Node: "n1", PrevModRev: 2},
			{Rev: 4, Name: "b", Deleted: true, Value: "v2", Node: "n2", PrevModRev: 3},
			{Rev: 4, Name: "c", Created: true, Value: "v4", Node: "n1"},
			{Rev: 5, Name: "l1", Created: true, Value: "v5", Node: "n1"},
			{Rev: 5, Name: "l2", Created: true, Value: "v6", Node: "n2"},
			{Rev: 6, Name: "l1", Deleted: true, Value: "v5", Node: "n1", PrevModRev: 5},
			{Rev: 6, Name: "l2", Deleted: true, Value: "v6", Node: "n2", PrevModRev: 5},
		},
		Ops: []h.Op{
			{ID: 1, Client: 1, Kind: h.Create, Name: "a", Value: "v1", Node: "n1", Call: 10, Return: 20, Out: h.OK, RV: 2},
			{ID: 2, Client: 1, Kind: h.Create, Name: "b", Value: "v2", Node: "n2", Call: 21, Return: 30, Out: h.OK, RV: 3},
			txn(3, h.Update, "a", "v3", "", 2),
			txn(4, h.Delete, "b", "", "", 3),
			txn(5, h.Create, "c", "v4", "n1", 0),
			// The lease: granted at 41, its transaction at [45, 50], its
			// expiry seen at 70.
			{ID: 6, Client: 3, Kind: h.Create, Name: "l1", Value: "v5", Node: "n1", Call: 45, Return: 50, Out: h.OK, RV: 5, Batch: h.BatchLease, BatchID: 1},
			{ID: 7, Client: 3, Kind: h.Create, Name: "l2", Value: "v6", Node: "n2", Call: 45, Return: 50, Out: h.OK, RV: 5, Batch: h.BatchLease, BatchID: 1},
			{ID: 8, Client: 3, Kind: h.Delete, Name: "l1", PreRV: 5, Call: 41, Return: 70, Out: h.OK, RV: 6, Batch: h.BatchLeaseExpiry, BatchID: 1},
			{ID: 9, Client: 3, Kind: h.Delete, Name: "l2", PreRV: 5, Call: 41, Return: 70, Out: h.OK, RV: 6, Batch: h.BatchLeaseExpiry, BatchID: 1},
			{ID: 10, Client: 4, Kind: h.List, Mode: h.Consistent, Call: 42, Return: 44, Out: h.OK, RV: 4,
				Items: []h.Item{{Name: "a", Value: "v3", Node: "n1", ModRev: 4}, {Name: "c", Value: "v4", Node: "n1", ModRev: 4}}},
			{ID: 11, Client: 4, Kind: h.List, Mode: h.Consistent, Call: 55, Return: 58, Out: h.OK, RV: 5,
				Items: []h.Item{{Name: "a", Value: "v3", Node: "n1", ModRev: 4}, {Name: "c", Value: "v4", Node: "n1", ModRev: 4}, {Name: "l1", Value: "v5", Node: "n1", ModRev: 5}, {Name: "l2", Value: "v6", Node: "n2", ModRev: 5}}},
			{ID: 12, Client: 4, Kind: h.List, Mode: h.Consistent, Call: 75, Return: 78, Out: h.OK, RV: 6,
				Items: []h.Item{{Name: "a", Value: "v3", Node: "n1", ModRev: 4}, {Name: "c", Value: "v4", Node: "n1", ModRev: 4}}},
			// A transaction whose compare on a failed (a is at 4): d's own
			// compare held.
			{ID: 13, Client: 2, Kind: h.Update, Name: "a", Value: "v7", PreRV: 2, Call: 80, Return: 90, Out: h.Failed, Reason: h.ReasonConflict, Batch: h.BatchTxn, BatchID: 2},
			{ID: 14, Client: 2, Kind: h.Create, Name: "d", Value: "v8", Node: "n1", Call: 80, Return: 90, Out: h.Failed, Reason: reasonAborted, Batch: h.BatchTxn, BatchID: 2},
		},
		Sessions: []h.WatchSession{
			{Watcher: 5, StartRV: 1, Start: 1, End: 100, Events: []h.WatchEvent{
				{Type: h.Added, Name: "a", RV: 2, Value: "v1"},
				{Type: h.Added, Name: "b", RV: 3, Value: "v2"},
				{Type: h.Modified, Name: "a", RV: 4, Value: "v3"},
				{Type: h.Deleted, Name: "b", RV: 4, Value: "v2"},
				{Type: h.Added, Name: "c", RV: 4, Value: "v4"},
				{Type: h.Added, Name: "l1", RV: 5, Value: "v5"},
				{Type: h.Added, Name: "l2", RV: 5, Value: "v6"},
				{Type: h.Deleted, Name: "l1", RV: 6, Value: "v5"},
				{Type: h.Deleted, Name: "l2", RV: 6, Value: "v6"},
			}},
		},
	}
}

// TestCheckersAcceptMultiKeyRecording: the checkers, unchanged, accept a
// multi-key transaction and a lease expiry recorded one op per key.
func TestCheckersAcceptMultiKeyRecording(t *testing.T) {
	r := checker.Check(multiKeyRun(), checker.Options{})
	if r.Total() != 0 {
		t.Fatalf("violations in a correct multi-key history: %v", r.Details)
	}
	if r.Porcupine == nil || r.Porcupine.Result != porcupine.Ok {
		t.Fatalf("porcupine: %+v", r.Porcupine)
	}
}

// TestCheckersCatchPartialMultiKeyRevision: a cache that delivers or lists
// only part of a multi-key revision is caught.
func TestCheckersCatchPartialMultiKeyRevision(t *testing.T) {
	t.Run("watch misses one event of the txn", func(t *testing.T) {
		run := multiKeyRun()
		evs := run.Sessions[0].Events
		run.Sessions[0].Events = append(evs[:4:4], evs[5:]...) // drop c@4
		if r := checker.Check(run, checker.Options{}); r.Counts[checker.WatchAtomic] == 0 {
			t.Errorf("watch-atomic found nothing: %v", r.Details)
		}
	})
	t.Run("list at the lease expiry still has one key", func(t *testing.T) {
		run := multiKeyRun()
		run.Ops[11].Items = append(run.Ops[11].Items, h.Item{Name: "l2", Value: "v6", Node: "n2", ModRev: 5})
		r := checker.Check(run, checker.Options{})
		if r.Counts[checker.MatchesEtcd] == 0 || r.Counts[checker.Linearizability] == 0 {
			t.Errorf("matches-etcd and linearizability must both object: %v", r.Details)
		}
	})
}

// TestUnknownMultiKeyTxnMustBeLearned pins down why txn.go learns the
// outcome of a transaction whose reply was lost instead of recording its
// ops as Unknown: the checkers resolve an Unknown write from etcd's
// history, and one op claims a revision, so only one key of an applied
// transaction is resolved and the others look lost to a later read. If the
// checkers learn to resolve every op of a revision, this test fails and
// learn may go.
func TestUnknownMultiKeyTxnMustBeLearned(t *testing.T) {
	run := multiKeyRun()
	for i := range run.Ops {
		if run.Ops[i].Batch == h.BatchTxn && run.Ops[i].BatchID == 1 {
			run.Ops[i].Out, run.Ops[i].RV, run.Ops[i].Return = h.Unknown, 0, 40
		}
	}
	if r := checker.Check(run, checker.Options{}); r.Total() == 0 {
		t.Fatalf("an Unknown multi-key txn now checks clean: the checkers resolve it; txn.go's learn is no longer needed")
	}
}

func TestFailReason(t *testing.T) {
	at := func(mod int64) *mvccpb.KeyValue { return &mvccpb.KeyValue{ModRevision: mod} }
	for _, tc := range []struct {
		kind h.Kind
		pre  int64
		kv   *mvccpb.KeyValue
		want string
	}{
		{h.Create, 0, at(7), h.ReasonExists},
		{h.Create, 0, nil, reasonAborted},
		{h.Update, 5, nil, h.ReasonNotFound},
		{h.Update, 5, at(7), h.ReasonConflict},
		{h.Update, 5, at(5), reasonAborted},
		{h.Delete, 5, nil, h.ReasonNotFound},
		{h.Delete, 5, at(6), h.ReasonConflict},
		{h.Delete, 5, at(5), reasonAborted},
	} {
		op := &h.Op{Kind: tc.kind, PreRV: tc.pre}
		if got := failReason(op, tc.kv); got != tc.want {
			t.Errorf("%s pre=%d kv=%v: %q, want %q", tc.kind, tc.pre, tc.kv, got, tc.want)
		}
	}
}

// TestEncodePod: what a client writes to etcd directly decodes as the
// truth and the caches decode a pod the store wrote.
func TestEncodePod(t *testing.T) {
	p := newPod("p", "n1", "v1")
	p.ResourceVersion = "42"
	b, err := encodePod(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodePod([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if d.Value != "v1" || d.Node != "n1" {
		t.Errorf("decoded %+v", d)
	}
	if strings.Contains(b, "resourceVersion") {
		t.Errorf("the stored pod carries a resourceVersion (etcd's modRev is its RV): %s", b)
	}
	if p.ResourceVersion != "42" {
		t.Errorf("encodePod changed its argument")
	}
}

// memberOnly is an API that only names its etcd member: all that clients
// writing to etcd directly ask of it.
type memberOnly struct {
	API
	member int
}

func (m memberOnly) Member() int { return m.member }

// TestDirectWritesAgainstEtcd drives txn.go and lease.go against a real
// cluster, through every way an outcome is learned: a committed
// transaction, one whose reply was lost (learned from etcd's history), a
// lease that expires, one whose transaction's reply was lost (fenced by
// revoking it), and one revoked when the traffic stops. The recorded
// history must pass every checker.
func TestDirectWritesAgainstEtcd(t *testing.T) {
	enabled(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := StartCluster(ctx, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tctx, stopTruth := context.WithCancel(ctx)
	defer stopTruth()
	truth := StartTruth(tctx, cl.Admin())
	rec := NewRecorder()
	raw := &rawEtcd{cl: cl, truth: truth, ledger: &ledger{}}
	c := newClient(1, 1, []API{memberOnly{member: 0}}, rec, nil, Traffic{Keys: 4, Nodes: 2, OpTimeout: 5 * time.Second})
	c.etcd = raw
	// waitLease polls the client's lease until it is settled.
	waitLease := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for c.lease != nil {
			if time.Now().After(deadline) {
				t.Fatalf("lease %x not settled", c.lease.id)
			}
			<-tick.C
			c.pollLease(ctx)
		}
	}
	batches := func(b h.Batch) (n int, out h.Outcome) {
		run := &h.Run{}
		rec.Snapshot(run)
		ids := map[int]bool{}
		for _, op := range run.Ops {
			if op.Batch == b {
				ids[op.BatchID], out = true, op.Out
			}
		}
		return len(ids), out
	}

	// A transaction on keys nobody has: creates, committed.
	if !c.txn(ctx) {
		t.Fatal("txn: no definite answer")
	}
	if n, out := batches(h.BatchTxn); n != 1 || out != h.OK {
		t.Fatalf("first txn: %d batches, outcome %s", n, out)
	}

	// A transaction whose reply was lost: committed through another
	// client, learned from etcd's history.
	c.batch++
	lost := []h.Op{
		{Client: 1, Kind: h.Create, Name: "lost-a", Node: nodeName(0), Value: c.value(), Batch: h.BatchTxn, BatchID: c.batch},
		{Client: 1, Kind: h.Create, Name: "lost-b", Node: nodeName(1), Value: c.value(), Batch: h.BatchTxn, BatchID: c.batch},
	}
	cmps, then, els, err := txnOps(lost, nil, clientv3.NoLease)
	if err != nil {
		t.Fatal(err)
	}
	lost[0].Call, lost[1].Call = rec.Now(), rec.Now()
	resp, err := cl.Admin().Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("txn: %v", err)
	}
	rev, ok := c.learn(ctx, lost)
	if !ok || rev != resp.Header.Revision {
		t.Fatalf("learn: %d %v, want %d", rev, ok, resp.Header.Revision)
	}
	lost[0].Return, lost[1].Return = rec.Now(), rec.Now()
	c.applied(lost, rev)
	if _, ok := c.learn(ctx, []h.Op{{Value: "never-written"}}); ok {
		t.Fatal("learn found a value nobody wrote")
	}

	// A lease that etcd expires.
	if !c.startLease(ctx) || c.lease == nil || c.lease.rev == 0 {
		t.Fatal("startLease: no lease")
	}
	waitLease()
	if n, _ := batches(h.BatchLeaseExpiry); n != 1 {
		t.Fatalf("%d lease expiries, want 1", n)
	}

	// A lease whose transaction's reply was lost: revoking it fences the
	// transaction, and etcd's history says it applied.
	g, err := cl.Pinned(0).Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	c.batch++
	ops := []h.Op{
		{Client: 1, Kind: h.Create, Name: leaseName(1, 0), Node: nodeName(0), Value: c.value(), Batch: h.BatchLease, BatchID: c.batch, Out: h.Unknown},
		{Client: 1, Kind: h.Create, Name: leaseName(1, 1), Node: nodeName(1), Value: c.value(), Batch: h.BatchLease, BatchID: c.batch, Out: h.Unknown},
	}
	granted := rec.Now()
	if cmps, then, els, err = txnOps(ops, nil, g.ID); err != nil {
		t.Fatal(err)
	}
	ops[0].Call, ops[1].Call = rec.Now(), rec.Now()
	if resp, err = cl.Admin().Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit(); err != nil || !resp.Succeeded {
		t.Fatalf("lease txn: %v", err)
	}
	ops[0].Return, ops[1].Return = rec.Now(), rec.Now()
	c.lease = &lease{id: g.ID, batch: c.batch, granted: granted, ops: ops, revokeAt: time.Now().Add(time.Minute)}
	waitLease()
	if n, out := batches(h.BatchLease); n != 2 || out != h.OK {
		t.Fatalf("lease txns: %d, last outcome %s", n, out)
	}
	if n, _ := batches(h.BatchLeaseRevoke); n != 1 {
		t.Fatalf("%d lease revokes, want 1", n)
	}

	// A lease the client still holds when the traffic stops.
	if !c.startLease(ctx) {
		t.Fatal("startLease: no lease")
	}
	c.endLease(ctx)
	if c.lease != nil || raw.ledger.err() != nil {
		t.Fatalf("endLease left lease %v, ledger: %v", c.lease, raw.ledger.err())
	}
	if n, _ := batches(h.BatchLeaseRevoke); n != 2 {
		t.Fatalf("%d lease revokes, want 2", n)
	}

	final, err := raw.revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := truth.WaitFor(ctx, final); err != nil {
		t.Fatal(err)
	}
	stopTruth()
	events, err := truth.Events()
	if err != nil {
		t.Fatal(err)
	}
	run := &h.Run{Truth: events, FinalRev: final, ContiguousTruth: true}
	rec.Snapshot(run)
	names := map[string]bool{}
	for _, e := range events {
		names[e.Name] = true
	}
	for n := range names {
		run.Keys = append(run.Keys, n)
	}
	if r := checker.Check(run, checker.Options{}); r.Total() != 0 {
		t.Fatalf("violations: %v", r.Details)
	}
	idx := h.NewTruth(events)
	for _, e := range events {
		if len(idx.AtRev(e.Rev)) < 2 {
			t.Errorf("revision %d changed one key; every direct write here changes two or more", e.Rev)
		}
	}
}

// TestStartClusterRetriesATakenPort: a port picked free but taken before
// the member binds it fails only that attempt; the cluster starts on new
// ports and serves reads.
func TestStartClusterRetriesATakenPort(t *testing.T) {
	enabled(t)
	taken := tcptest.Listen(t)
	first := true
	pick := func() (string, error) {
		if first {
			first = false
			return taken.Addr().String(), nil
		}
		return freeAddr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := startClusterPicking(ctx, t.TempDir(), 1, pick)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if first {
		t.Fatal("the taken port was never picked")
	}
	if _, err := cl.Admin().Get(ctx, "any"); err != nil {
		t.Fatalf("cluster started after the retry does not serve reads: %v", err)
	}
}
