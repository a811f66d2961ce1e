package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Fault kinds. Every run injects each at least once.
const (
	FaultKillMember    = "kill-member"
	FaultIsolateMember = "isolate-cache-member"
	FaultLeaderChange  = "leader-change"
	FaultCompact       = "compact-while-watching"
	FaultCancelWatch   = "cancel-cache-watch-stream"
	FaultSlowWatcher   = "slow-watcher"
	FaultRestartCache  = "restart-cache"
	FaultPeerDelay     = "peer-delay"
	FaultPeerDrop      = "peer-drop"
)

// FaultKinds lists every kind.
var FaultKinds = []string{
	FaultKillMember, FaultIsolateMember, FaultLeaderChange, FaultCompact, FaultCancelWatch,
	FaultSlowWatcher, FaultRestartCache, FaultPeerDelay, FaultPeerDrop,
}

// faultTimeout bounds the longest waits of a fault: a restarted cache or
// member becoming ready, and the cluster's recovery afterwards.
const faultTimeout = 3 * time.Minute

// injector runs the fault schedule.
type injector struct {
	cl     *Cluster
	caches []API
	rec    *Recorder
	wd     *watchdog
	truth  *Truth
	rng    *rand.Rand
	tr     Traffic
	// hold is how long a fault lasts before it is healed.
	hold time.Duration
	// slowID numbers slow watchers.
	slowID int
	// probeMode is the read mode of the isolation probe (rv=0 when the
	// traffic has rv=0 reads).
	probeMode record.ReadMode
}

// pause waits d or until ctx ends (the schedule's timer; never used to wait
// for a condition).
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// inject runs one fault of kind to completion (inject, hold, heal) and
// records it; a failed injection is recorded with its error. It then waits
// until the cluster and the caches are healthy again: an error means they
// did not recover, and the run cannot go on.
func (in *injector) inject(ctx context.Context, kind string) error {
	f := record.Fault{Kind: kind, Start: in.rec.Now()}
	// apply's own steps are bounded by the hold and by timeouts of at most
	// 3 minutes (a restart waiting for readiness).
	end := in.wd.begin("fault "+kind+": inject, hold and heal", in.hold+faultTimeout)
	if err := in.apply(ctx, kind, &f); err != nil {
		f.Err = err.Error()
	}
	end()
	f.End = in.rec.Now()
	in.rec.AddFault(f)
	// Generous: the machine may be loaded; recovery time is not asserted.
	hctx, cancel := context.WithTimeout(ctx, faultTimeout)
	defer cancel()
	defer in.wd.begin("fault "+kind+": recovery", faultTimeout)()
	if err := in.cl.WaitHealthy(hctx); err != nil {
		return fmt.Errorf("after %s: %w", kind, err)
	}
	for _, c := range in.caches {
		if err := c.WaitReady(hctx); err != nil {
			return fmt.Errorf("after %s: %w", kind, err)
		}
	}
	return nil
}

func (in *injector) apply(ctx context.Context, kind string, f *record.Fault) error {
	switch kind {
	case FaultKillMember:
		m := in.rng.IntN(Members)
		if in.rng.IntN(2) == 0 {
			if l := in.cl.Leader(); l >= 0 {
				m = l
			}
		}
		f.Detail = fmt.Sprintf("member %d (leader %d)", m, in.cl.Leader())
		in.cl.Kill(m)
		pause(ctx, in.hold)
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return in.cl.Restart(rctx, m)

	case FaultIsolateMember:
		c := in.caches[in.rng.IntN(len(in.caches))]
		other := in.caches[(c.Index()+1)%len(in.caches)]
		f.Detail = fmt.Sprintf("member %d of cache %d (leader %d)", c.Member(), c.Index(), in.cl.Leader())
		in.cl.Isolate(c.Member())
		defer in.cl.HealPeers()
		// Probe right away, while the isolated member's cache still holds
		// its last state: write through the majority, see it on the other
		// cache, then read the isolated cache, as a kubelet whose
		// apiserver changed would.
		in.probe(ctx, other, c)
		pause(ctx, in.hold)
		return nil

	case FaultLeaderChange:
		lead := in.cl.Leader()
		to := (lead + 1 + in.rng.IntN(Members-1)) % Members
		f.Detail = fmt.Sprintf("leader %d -> member %d", lead, to)
		var err error
		for range 5 { // elections can race the transfer; retry a little
			mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = in.cl.MoveLeader(mctx, to)
			cancel()
			if err == nil {
				return nil
			}
			pause(ctx, 500*time.Millisecond)
		}
		return err

	case FaultCompact:
		// A cache whose etcd link goes silent falls behind; etcd compacts
		// past it at the newest revision the truth watch has (so the truth
		// stays complete); then the link comes back and the cache's watch
		// must resume from a compacted revision: it relists, and watchers
		// resuming from before the relist meet 410 and relist too.
		c := in.caches[in.rng.IntN(len(in.caches))]
		p := in.cl.ClientProxy(c.Member())
		p.Stall()
		pause(ctx, in.hold)
		rev := in.truth.Last()
		f.Rev = rev
		f.Detail = fmt.Sprintf("cache %d's etcd link stalled for %v, compact at %d, link reset", c.Index(), in.hold, rev)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := in.cl.Admin().Compact(cctx, rev)
		p.Heal()
		p.Reset()
		if errors.Is(err, rpctypes.ErrCompacted) {
			err = nil // already compacted at or past rev: same effect
		}
		return err

	case FaultCancelWatch:
		c := in.caches[in.rng.IntN(len(in.caches))]
		f.Detail = fmt.Sprintf("reset the etcd connections of cache %d (member %d)", c.Index(), c.Member())
		in.cl.ClientProxy(c.Member()).Reset()
		return nil

	case FaultSlowWatcher:
		in.slowID++
		c := in.rng.IntN(len(in.caches))
		f.Detail = fmt.Sprintf("watcher on cache %d does not read for %v", c, slowFor)
		w := &watcher{actor: actor{id: 900 + in.slowID, rng: rand.New(rand.NewPCG(uint64(in.slowID), 7)), caches: in.caches, cur: c, rec: in.rec, wd: in.wd, tr: in.tr}, listMode: record.Consistent}
		// List until it works (the cache's member may have just come back).
		var op record.Op
		deadline := time.Now().Add(30 * time.Second)
		for {
			op = record.Op{Client: w.id, Cache: c, Kind: record.List, Mode: record.Consistent}
			lctx, cancel := context.WithTimeout(ctx, in.tr.OpTimeout)
			op.Call = in.rec.Now()
			err := in.caches[c].Do(lctx, &op)
			op.Return = in.rec.Now()
			cancel()
			classify(&op, err)
			in.rec.AddOp(op)
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("slow watcher's list: %w", err)
			}
			pause(ctx, 200*time.Millisecond)
		}
		sess, _ := w.session(ctx, 0, op.RV, true)
		if sess == nil {
			return errors.New("slow watcher: watch refused")
		}
		in.rec.AddSession(*sess)
		f.Detail += fmt.Sprintf("; got %d events, ended %s", len(sess.Events), sess.EndReason)
		return nil

	case FaultRestartCache:
		c := in.caches[in.rng.IntN(len(in.caches))]
		f.Detail = fmt.Sprintf("cache %d", c.Index())
		rctx, cancel := context.WithTimeout(ctx, faultTimeout)
		defer cancel()
		return c.Restart(rctx)

	case FaultPeerDelay:
		m := in.rng.IntN(Members)
		d := time.Duration(20+in.rng.IntN(80)) * time.Millisecond
		f.Detail = fmt.Sprintf("%v on every peer message to member %d", d, m)
		in.cl.PeerProxy(m).Delay(d)
		pause(ctx, in.hold)
		in.cl.PeerProxy(m).Heal()
		return nil

	case FaultPeerDrop:
		m := in.rng.IntN(Members)
		p := 0.02 + in.rng.Float64()*0.08
		f.Detail = fmt.Sprintf("reset peer connections to member %d with p=%.2f per chunk", m, p)
		in.cl.PeerProxy(m).Drop(p)
		pause(ctx, in.hold)
		in.cl.PeerProxy(m).Heal()
		return nil
	}
	return fmt.Errorf("unknown fault %q", kind)
}

// probeClient is the client ID of the isolation probe.
const probeClient = 800

// probe writes through good, waits until good serves it, then reads from
// lagging. Its ops go to the history like any client's: the time-travel
// checker judges them.
func (in *injector) probe(ctx context.Context, good, lagging API) {
	c := newClient(probeClient, in.rng.Uint64(), in.caches, in.rec, in.wd, in.tr)
	for i := range 3 {
		c.seq = int(in.rng.Uint32())
		w := record.Op{Client: probeClient, Cache: good.Index(), Kind: record.Create, Name: fmt.Sprintf("probe-%d", in.rng.IntN(1<<30)), Node: nodeName(0), Value: fmt.Sprintf("probe-%d-%d", i, in.rng.Uint64())}
		c.do(ctx, &w)
		in.rec.AddOp(w)
		if w.Out != record.OK {
			continue
		}
		// Wait (bounded) until the good cache's reads in probe mode show
		// the write.
		deadline := time.Now().Add(5 * time.Second)
		poll := time.NewTicker(20 * time.Millisecond)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			r := record.Op{Client: probeClient, Cache: good.Index(), Kind: record.List, Mode: in.probeMode}
			c.do(ctx, &r)
			in.rec.AddOp(r)
			if r.Out == record.OK && r.RV >= w.RV {
				break
			}
			<-poll.C
		}
		poll.Stop()
		r := record.Op{Client: probeClient, Cache: lagging.Index(), Kind: record.List, Mode: in.probeMode}
		c.do(ctx, &r)
		in.rec.AddOp(r)
		g := record.Op{Client: probeClient, Cache: lagging.Index(), Kind: record.Get, Mode: in.probeMode, Name: w.Name}
		c.do(ctx, &g)
		in.rec.AddOp(g)
	}
}
