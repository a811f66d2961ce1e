package robustness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Every write through an API changes one key per etcd revision. A
// revision that changes several keys (a multi-key transaction, a lease
// expiry deleting several keys) must reach a cache's watchers, lists and
// gets whole; a cache that applied only one event of such a revision went
// unnoticed. So some clients also write to etcd directly, as a controller
// sharing etcd with the apiservers would: a conditional transaction on 2-4
// pods (here), and 2-4 new pods attached to a short lease that etcd
// deletes at one revision when it expires (lease.go).
//
// Each such write is recorded as one record.Op per key, all with the
// transaction's Call, Return, outcome and revision, so the checkers judge
// it unchanged, key by key: porcupine per key, nothing-lost, fresh-list
// and time-travel take every op as a write on its key at RV; the watch
// checkers and matches-etcd compare with etcd's history, which
// record.Truth indexes per revision (AtRev holds all of a revision's
// events, so watch-atomic wants them delivered together).

// rawEtcd is what a client needs to write to etcd without an API.
type rawEtcd struct {
	cl    *Cluster
	truth *Truth
	// ledger keeps the writes whose outcome the client could not learn in
	// time, until the run settles them against the complete truth.
	ledger *ledger
}

// reasonAborted is the failure reason of a key whose own compare held in
// a transaction that failed on another key's compare: its write did not
// happen, but its precondition did not fail either. The model accepts a
// failure with this reason in any state of the key; ReasonConflict would
// claim that the key's version differed from PreRV.
const reasonAborted = "txn-aborted"

// learnTimeout bounds how long a client tries to learn the outcome of a
// write whose reply it lost.
const learnTimeout = 15 * time.Second

func podKey(name string) string { return podPrefix + name }

// encodePod encodes p exactly as the in-process stores do (storageCodec):
// the object without its resourceVersion, which etcd's modRev carries.
func encodePod(p *api.Pod) (string, error) {
	p = p.DeepCopy()
	p.ResourceVersion = ""
	b, err := runtime.Encode(storageCodec(), p)
	return string(b), err
}

// txn runs one transaction on 2-4 distinct pods of the key space through
// the etcd member of the client's current API: a create of each pod the
// client does not know (guarded by CreateRevision == 0), and an update or
// delete of each it knows (guarded by ModRevision == the modRev it knows).
// It reports false when the outcome was not a definite answer.
func (c *client) txn(ctx context.Context) bool {
	c.batch++
	n := 2 + c.rng.IntN(3)
	ops := make([]record.Op, 0, n)
	for _, k := range c.rng.Perm(c.tr.Keys)[:n] {
		op := record.Op{Client: c.id, Cache: c.cur, Name: podName(k), Batch: record.BatchTxn, BatchID: c.batch}
		pre, known := c.known[op.Name]
		switch {
		case !known:
			op.Kind, op.Node, op.Value = record.Create, nodeName(c.rng.IntN(c.tr.Nodes)), c.value()
		case c.rng.IntN(3) == 0:
			op.Kind, op.PreRV = record.Delete, pre
		default:
			op.Kind, op.PreRV, op.Value = record.Update, pre, c.value()
		}
		ops = append(ops, op)
	}
	// Every transaction writes a value: when its reply is lost, etcd's
	// history shows by that value whether, and at which revision, it
	// applied.
	if !slices.ContainsFunc(ops, func(o record.Op) bool { return o.Value != "" }) {
		ops[0].Kind, ops[0].Value = record.Update, c.value()
	}
	member := c.caches[c.cur].Member()
	cli := c.etcd.cl.Pinned(member)
	octx, cancel := context.WithTimeout(ctx, c.tr.OpTimeout)
	defer cancel()
	end := c.wd.begin(fmt.Sprintf("client %d: %d-key txn on member %d", c.id, n, member), c.tr.OpTimeout)
	defer end()
	bodies, err := updatedBodies(octx, cli, ops)
	if err != nil {
		return false // nothing was written
	}
	cmps, then, els, err := txnOps(ops, bodies, clientv3.NoLease)
	if err != nil {
		return false
	}
	resp, err := c.commit(octx, cli, cmps, then, els, ops, end)
	switch {
	case err == nil && resp.Succeeded:
		c.applied(ops, resp.Header.Revision)
	case err == nil:
		c.failed(ops, resp)
		return true
	default:
		for i := range ops {
			ops[i].Out, ops[i].Err = record.Unknown, err.Error()
		}
		rev, ok := c.learn(ctx, ops)
		if !ok {
			c.etcd.ledger.hold(ops)
			return false
		}
		// The client knows the outcome from now on.
		now := c.rec.Now()
		for i := range ops {
			ops[i].Return = now
		}
		c.applied(ops, rev)
		return false
	}
	return true
}

// updatedBodies reads the pods ops update, in one read at one revision,
// and returns each with its value annotation set to the op's value: what
// GuaranteedUpdate would write. A pod whose modRev is not the op's PreRV
// at that read can never have it again (revisions only grow, and PreRV is
// older than the read), so the transaction fails on its compare and the
// body is never stored; a missing pod gets a fresh one for the same
// reason.
func updatedBodies(ctx context.Context, cli *clientv3.Client, ops []record.Op) (map[string]string, error) {
	var gets []clientv3.Op
	for _, op := range ops {
		if op.Kind == record.Update {
			gets = append(gets, clientv3.OpGet(podKey(op.Name)))
		}
	}
	out := map[string]string{}
	if len(gets) == 0 {
		return out, nil
	}
	resp, err := cli.Txn(ctx).Then(gets...).Commit()
	if err != nil {
		return nil, err
	}
	found := map[string]*mvccpb.KeyValue{}
	for _, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().Kvs {
			found[string(kv.Key)] = kv
		}
	}
	for _, op := range ops {
		if op.Kind != record.Update {
			continue
		}
		pod := newPod(op.Name, "", op.Value)
		if kv, ok := found[podKey(op.Name)]; ok {
			obj, err := runtime.Decode(storageCodec(), kv.Value)
			if err != nil {
				return nil, fmt.Errorf("decode %s: %w", op.Name, err)
			}
			p, ok := obj.(*api.Pod)
			if !ok {
				return nil, fmt.Errorf("%s holds a %T", op.Name, obj)
			}
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[ValueAnnotation] = op.Value
			pod = p
		}
		b, err := encodePod(pod)
		if err != nil {
			return nil, err
		}
		out[op.Name] = b
	}
	return out, nil
}

// txnOps builds the transaction of ops: compares, writes (puts attached to
// lease, if any) and, when a compare fails, a read of every key at the
// transaction's revision, which says why (failed).
// commit sends one etcd transaction and stamps every op of it with the
// call and return times of that one request, in the recorder's clock;
// end (the watchdog's) runs as soon as the answer is in.
func (c *client) commit(ctx context.Context, cli *clientv3.Client, cmps []clientv3.Cmp, then, els []clientv3.Op, ops []record.Op, end func()) (*clientv3.TxnResponse, error) {
	call := c.rec.Now()
	resp, err := cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
	ret := c.rec.Now()
	end()
	for i := range ops {
		ops[i].Call, ops[i].Return = call, ret
	}
	return resp, err
}

func txnOps(ops []record.Op, bodies map[string]string, lease clientv3.LeaseID) (cmps []clientv3.Cmp, then, els []clientv3.Op, err error) {
	var putOpts []clientv3.OpOption
	if lease != clientv3.NoLease {
		putOpts = append(putOpts, clientv3.WithLease(lease))
	}
	for _, op := range ops {
		key := podKey(op.Name)
		switch op.Kind {
		case record.Create:
			b, err := encodePod(newPod(op.Name, op.Node, op.Value))
			if err != nil {
				return nil, nil, nil, err
			}
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			then = append(then, clientv3.OpPut(key, b, putOpts...))
		case record.Update:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", op.PreRV))
			then = append(then, clientv3.OpPut(key, bodies[op.Name], putOpts...))
		case record.Delete:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", op.PreRV))
			then = append(then, clientv3.OpDelete(key))
		default:
			return nil, nil, nil, fmt.Errorf("txn op %s", op.Kind)
		}
		els = append(els, clientv3.OpGet(key))
	}
	return cmps, then, els, nil
}

// applied marks ops as one transaction etcd applied at rev, records them
// and learns from them.
func (c *client) applied(ops []record.Op, rev int64) {
	for i := range ops {
		op := &ops[i]
		op.Out, op.RV = record.OK, rev
		if op.Kind == record.Delete {
			delete(c.known, op.Name)
		} else {
			c.known[op.Name] = rev
		}
		c.rec.AddOp(*op)
	}
	c.observe(rev)
}

// failed marks ops as a transaction whose compares failed (nothing
// changed) and records them. The Else branch read every key at the
// transaction's revision, so each op gets the reason its own key gives;
// see failReason.
func (c *client) failed(ops []record.Op, resp *clientv3.TxnResponse) {
	for i := range ops {
		op := &ops[i]
		var kv *mvccpb.KeyValue
		if i < len(resp.Responses) {
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				kv = kvs[0]
			}
		}
		op.Out, op.Reason = record.Failed, failReason(op, kv)
		op.Err = "etcd txn: compare failed"
		if kv != nil {
			c.known[op.Name] = kv.ModRevision
		} else {
			delete(c.known, op.Name)
		}
		c.rec.AddOp(*op)
	}
}

// failReason says how op's key stood when its transaction's compares
// failed: kv is the key at the transaction's revision (nil: absent).
// These are the reasons the storage.Interface would give for the same
// write alone, so the model checks them; a key whose own compare held gets
// reasonAborted.
func failReason(op *record.Op, kv *mvccpb.KeyValue) string {
	switch {
	case op.Kind == record.Create && kv != nil:
		return record.ReasonExists
	case op.Kind == record.Create:
		return reasonAborted
	case kv == nil:
		return record.ReasonNotFound
	case kv.ModRevision != op.PreRV:
		return record.ReasonConflict
	}
	return reasonAborted
}

// learn finds out whether a transaction whose reply was lost applied, and
// at which revision: it reads etcd's current revision through the admin
// client (every member, no proxy), waits until the truth covers it and
// looks for the values the transaction wrote (unique per write). It
// reports false when they are not there: the transaction had not applied
// by then, but might still (a proposal delayed on its way to the leader),
// so the ledger keeps it for the end of the run.
//
// Why not record the ops as Unknown, as a single-key write is? The
// checkers resolve an Unknown write from etcd's history, and one event
// claims its revision for one op: the other keys' ops of the same
// revision would be dropped as never applied, and a later read of those
// keys would look like a linearizability violation. Learning the outcome
// here, and recording the ops with the revision and the time the client
// learned it, keeps the checkers unchanged and exact.
func (c *client) learn(ctx context.Context, ops []record.Op) (int64, bool) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), learnTimeout)
	defer cancel()
	defer c.wd.begin(fmt.Sprintf("client %d: learn the outcome of a txn", c.id), learnTimeout)()
	rev, err := c.etcd.revision(lctx)
	if err != nil {
		return 0, false
	}
	if err := c.etcd.truth.WaitFor(lctx, rev); err != nil {
		return 0, false
	}
	return c.etcd.written(ops)
}

// written returns the revision at which the truth has one of ops' values.
func (e *rawEtcd) written(ops []record.Op) (int64, bool) {
	for _, op := range ops {
		if op.Value == "" {
			continue
		}
		if rev, ok := e.truth.Written(op.Value); ok {
			return rev, true
		}
	}
	return 0, false
}

// revision reads etcd's current revision with a linearizable read through
// the admin client, retrying until ctx ends (a leader election answers
// with errors for a moment).
func (e *rawEtcd) revision(ctx context.Context) (int64, error) {
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	for {
		resp, err := e.cl.Admin().Get(ctx, "freshcache-robustness-revision")
		if err == nil {
			return resp.Header.Revision, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("etcd's revision: %w (last: %v)", ctx.Err(), err)
		case <-retry.C:
		}
	}
}

// ledger holds what clients could not settle while the traffic ran:
// transactions whose outcome was still unknown, and errors that make the
// run uncheckable (a lease that could not be revoked).
type ledger struct {
	// mu guards held and errs.
	mu   sync.Mutex
	held [][]record.Op
	errs []error
}

func (l *ledger) hold(ops []record.Op) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = append(l.held, ops)
}

func (l *ledger) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

// err joins the errors clients reported.
func (l *ledger) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.errs...)
}

// settle records the held transactions once the truth is complete up to
// the final revision, when every write in flight has long been applied or
// dropped: one that applied is recorded at its revision, returning now
// (when the harness learned it); one that did not stays Unknown, which the
// checkers drop as never applied.
func (l *ledger) settle(e *rawEtcd, rec *Recorder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ops := range l.held {
		rev, ok := e.written(ops)
		now := rec.Now()
		for _, op := range ops {
			if ok {
				op.Out, op.RV, op.Return = record.OK, rev, now
			}
			rec.AddOp(op)
		}
	}
	l.held = nil
}
