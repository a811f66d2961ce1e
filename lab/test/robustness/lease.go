package robustness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Leases: now and then a client grants a lease with etcd's minimum TTL,
// creates 2-4 pods attached to it in one transaction, and etcd deletes
// them all at one revision when the lease expires.
//
// Nobody's request makes that deletion, so no client op would explain it,
// and nothing-lost rejects a change in etcd that no op explains. The
// checkers treat every deletion as some client's Delete op. So the client
// that granted the lease records one Delete op per key when it observes
// the deletion in etcd's history (the truth, a direct etcd watch): Call is
// when it called Grant (before the lease existed, so before etcd could
// delete anything), Return is when it saw the deletion, RV is the
// deletion's revision and PreRV the version the lease's transaction wrote.
// That is the op "delete these keys when the lease ends", and the checkers
// judge it like any delete.
//
// The pods are named lease-<client>-<i>, which no other op uses: only the
// lease's end deletes them, so the client knows which deletions are its
// lease's without asking etcd, and a client's next lease finds its names
// free, since it holds one lease at a time.

// leaseKeys is how many pod names each client keeps for its leases.
const leaseKeys = 4

// leaseGrace: a lease whose keys etcd has not deleted within its TTL plus
// this is revoked, so recording never waits forever. Leader changes extend
// leases, and a killed leader's leases wait for the next leader.
const leaseGrace = 20 * time.Second

// endLeaseTimeout bounds how long a client, when the traffic stops, tries
// to revoke its lease and see its keys deleted.
const endLeaseTimeout = 30 * time.Second

func leaseName(client, i int) string { return "lease-" + strconv.Itoa(client) + "-" + strconv.Itoa(i) }

// lease is a client's lease whose keys' deletion it has not recorded yet.
type lease struct {
	id    clientv3.LeaseID
	batch int
	cache int
	// granted is when Grant was called.
	granted int64
	// ops are the creates of its transaction (not recorded yet while rev
	// is 0).
	ops []record.Op
	// rev is the transaction's revision; 0 while its outcome is unknown.
	rev int64
	// revokeAt: the client revokes the lease if its keys are not deleted by
	// then.
	revokeAt time.Time
	// revoked: the client called Revoke, so the deletion may be its own.
	// Only a deletion seen before any Revoke counts as an expiry.
	revoked bool
}

// startLease grants a lease through the etcd member of the client's
// current API and creates 2-4 pods attached to it in one transaction. It
// reports false when an outcome was not a definite answer.
func (c *client) startLease(ctx context.Context) bool {
	c.batch++
	member := c.caches[c.cur].Member()
	cli := c.etcd.cl.Pinned(member)
	octx, cancel := context.WithTimeout(ctx, c.tr.OpTimeout)
	defer cancel()
	end := c.wd.begin(fmt.Sprintf("client %d: lease on member %d", c.id, member), c.tr.OpTimeout)
	defer end()
	granted := c.rec.Now()
	// etcd raises a TTL of 1 to its minimum: 3/2 of the election timeout,
	// rounded up to seconds, so 2 s with the members' default 100 ms
	// heartbeat and 1 s election timeout.
	g, err := cli.Grant(octx, 1)
	if err != nil {
		// No key is attached to a lease whose grant reply was lost: it
		// expires within its TTL and changes nothing in the key space.
		return false
	}
	n := 2 + c.rng.IntN(leaseKeys-1)
	ops := make([]record.Op, 0, n)
	for _, i := range c.rng.Perm(leaseKeys)[:n] {
		ops = append(ops, record.Op{
			Client: c.id, Cache: c.cur, Kind: record.Create, Name: leaseName(c.id, i),
			Node: nodeName(c.rng.IntN(c.tr.Nodes)), Value: c.value(), Batch: record.BatchLease, BatchID: c.batch,
		})
	}
	cmps, then, els, err := txnOps(ops, nil, g.ID)
	if err != nil {
		c.dropLease(ctx, g.ID)
		return false
	}
	resp, err := c.commit(octx, cli, cmps, then, els, ops, end)
	l := &lease{id: g.ID, batch: c.batch, cache: c.cur, granted: granted, ops: ops, revokeAt: time.Now().Add(time.Duration(g.TTL)*time.Second + leaseGrace)}
	switch {
	case err == nil && resp.Succeeded:
		c.applied(ops, resp.Header.Revision)
		l.rev = resp.Header.Revision
		c.lease = l
		return true
	case err == nil:
		// The names are the client's own and free; recorded like any
		// transaction whose compares failed, should it happen.
		c.failed(ops, resp)
		c.dropLease(ctx, g.ID)
		return true
	default:
		for i := range ops {
			ops[i].Out, ops[i].Err = record.Unknown, err.Error()
		}
		c.lease = l // settleLease learns the outcome
		return false
	}
}

// dropLease revokes a lease no key was attached to (best effort: it
// expires by itself within its TTL, changing nothing).
func (c *client) dropLease(ctx context.Context, id clientv3.LeaseID) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = c.etcd.cl.Admin().Revoke(rctx, id)
}

// pollLease moves the client's lease on between its ops; see settleLease.
// A step that fails is tried again at the next op.
func (c *client) pollLease(ctx context.Context) {
	if c.lease != nil {
		_ = c.settleLease(ctx, false)
	}
}

// endLease settles the client's lease when the traffic stops: it revokes
// the lease and records the deletion of its keys, so that nothing changes
// in etcd after the run reads its final revision. Failing that, the run
// cannot be checked: it tells the ledger.
func (c *client) endLease(ctx context.Context) {
	if c.lease == nil {
		return
	}
	deadline := time.Now().Add(endLeaseTimeout)
	retry := time.NewTicker(200 * time.Millisecond)
	defer retry.Stop()
	for {
		err := c.settleLease(ctx, true)
		if c.lease == nil {
			return
		}
		if time.Now().After(deadline) {
			c.etcd.ledger.fail(fmt.Errorf("client %d: lease %x not settled within %v when the traffic stopped: %v", c.id, c.lease.id, endLeaseTimeout, err))
			return
		}
		<-retry.C
	}
}

// settleLease learns the outcome of the lease's transaction when its reply
// was lost, and records the deletion of its keys once etcd's history has
// it. With force, or past revokeAt, it revokes the lease rather than wait
// for etcd to expire it. It returns the error of a step that failed.
func (c *client) settleLease(ctx context.Context, force bool) error {
	l := c.lease
	if l.rev == 0 {
		// Revoking the lease fences its transaction: the puts name the
		// lease, so once it is gone the transaction can no longer apply,
		// and etcd's history up to the revoke says whether it did.
		if err := c.revoke(ctx, l); err != nil {
			return err
		}
		rev, ok := c.etcd.written(l.ops)
		if !ok {
			// Never applied: Unknown ops that the checkers drop.
			for _, op := range l.ops {
				c.rec.AddOp(op)
			}
			c.lease = nil
			return nil
		}
		now := c.rec.Now()
		for i := range l.ops {
			l.ops[i].Return = now
		}
		c.applied(l.ops, rev)
		l.rev = rev
	}
	if c.recordDeletion(l) {
		return nil
	}
	if !force && time.Now().Before(l.revokeAt) {
		return nil
	}
	if err := c.revoke(ctx, l); err != nil {
		return err
	}
	if c.recordDeletion(l) {
		return nil
	}
	return fmt.Errorf("client %d: lease %x is gone, but etcd's history has no deletion of its keys written at %d", c.id, l.id, l.rev)
}

// revoke revokes l through the admin client and waits until the truth
// covers the revoke: then it has the deletion of l's keys, by the revoke or
// by an expiry before it.
func (c *client) revoke(ctx context.Context, l *lease) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), learnTimeout)
	defer cancel()
	defer c.wd.begin(fmt.Sprintf("client %d: revoke lease %x", c.id, l.id), learnTimeout)()
	l.revoked = true
	var rev int64
	resp, err := c.etcd.cl.Admin().Revoke(rctx, l.id)
	switch {
	case err == nil:
		rev = resp.Header.Revision
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		// Expired (or revoked by a retried call): a linearizable read after
		// this covers the deletion.
		if rev, err = c.etcd.revision(rctx); err != nil {
			return err
		}
	default:
		return fmt.Errorf("revoke lease %x: %w", l.id, err)
	}
	return c.etcd.truth.WaitFor(rctx, rev)
}

// recordDeletion records one Delete op per key of l once the truth has the
// deletion of every key's version l wrote, and ends l.
func (c *client) recordDeletion(l *lease) bool {
	revs := make([]int64, len(l.ops))
	for i, op := range l.ops {
		rev, ok := c.etcd.truth.DeletedAt(op.Name, l.rev)
		if !ok {
			return false
		}
		revs[i] = rev
	}
	batch := record.BatchLeaseExpiry
	if l.revoked {
		batch = record.BatchLeaseRevoke
	}
	now := c.rec.Now()
	for i, op := range l.ops {
		c.rec.AddOp(record.Op{
			Client: c.id, Cache: l.cache, Kind: record.Delete, Name: op.Name, PreRV: l.rev,
			Call: l.granted, Return: now, Out: record.OK, RV: revs[i], Batch: batch, BatchID: l.batch,
		})
		delete(c.known, op.Name)
		c.observe(revs[i])
	}
	c.lease = nil
	return true
}
