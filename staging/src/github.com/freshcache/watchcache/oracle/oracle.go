package oracle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	// ErrFetchFailed wraps the cause of a failed revision fetch. Every
	// Revision call that the fetch covered returns it. The read must not be
	// served from the cache: delegate it to etcd or reject it (429).
	ErrFetchFailed = errors.New("oracle: revision fetch failed")
	// ErrFetchTimedOut is wrapped, beside ErrFetchFailed, by the error of
	// a fetch that got no answer within Options.FetchTimeout: etcd
	// neither answered nor refused. A member cut off from its leader holds
	// a linearizable read so until the client's context ends
	// (TestPartitionedMember). Upstream's watch reads etcd's revision
	// under the client's own context and so waits through it; a cache
	// that serves watches the same way asks again instead of failing one.
	// Any other fetch error came from etcd (or the client) and is final.
	ErrFetchTimedOut = errors.New("oracle: etcd did not answer within the fetch timeout")
	// ErrClosed is returned by Revision once the Oracle is closed.
	ErrClosed = errors.New("oracle: closed")
)

// DefaultKey is the key the revision fetch ranges over when Options.Key is
// empty. It need not exist: a count-only range over a missing key is as
// linearizable as any other, and returns no data.
const DefaultKey = "/registry/freshcache/revision"

// TraceRegionFetch names the execution-trace region (runtime/trace) around
// each revision fetch, from the request until etcd's answer. With tracing
// off a region costs a few nanoseconds. kube-apiserver serves a trace at
// /debug/pprof/trace; freshcache-bench trace-wait reads one.
const TraceRegionFetch = "freshcache.fetch"

// DefaultFetchTimeout bounds one revision fetch when Options.FetchTimeout is
// zero. A fetch that takes longer fails, and so do the reads it covered.
const DefaultFetchTimeout = 5 * time.Second

// Recorder receives the Oracle's measurements. Methods must be cheap and safe
// for concurrent use; they are called under the Oracle's lock, before the
// callers they count are answered, and must not call back into the Oracle.
// metrics.OracleRecorder implements it on the component-base legacy
// registry.
type Recorder interface {
	// FetchDone is called once for every fetch sent to etcd, when it ends.
	// reads is the number of Revision calls it answered (with a revision or
	// an error); zero if every caller gave up first. took is the fetch's
	// round trip, from just before the request was sent to its answer. err
	// is nil on success.
	FetchDone(reads int, took time.Duration, err error)
	// WriteAnswered is called when a write's revision answered reads
	// Revision calls (reads > 0) that would otherwise have waited for a
	// fetch (see Write).
	WriteAnswered(reads int)
	// HoldEnded is called when a round held for a write (Options.WriteHold)
	// stops being held: outcome is metrics.HoldWrite when a write started
	// and covered it, metrics.HoldExpired when the hold ran out and a fetch
	// went out, metrics.HoldAbandoned when every caller gave up first.
	HoldEnded(outcome string)
}

type noopRecorder struct{}

func (noopRecorder) FetchDone(int, time.Duration, error) {}
func (noopRecorder) WriteAnswered(int)                   {}
func (noopRecorder) HoldEnded(string)                    {}

// Options configures an Oracle. The zero value means the production
// defaults.
type Options struct {
	// Key is the single key the fetch ranges over. Default DefaultKey. With
	// etcd auth, the client must be allowed to read it.
	Key string
	// FetchTimeout bounds each fetch. Default DefaultFetchTimeout.
	FetchTimeout time.Duration
	// Recorder receives measurements. Default: none.
	Recorder Recorder
	// WriteWait bounds how long open rounds wait, when a fetch or a write
	// ends, for the writes in flight that cover them (see Write) before
	// the Oracle fetches for them. Zero: a moving mean of the fetch round
	// trip, so that waiting for a write costs a read at most about one
	// fetch. Negative: never wait; writes still answer rounds that a
	// fetch has not answered yet.
	WriteWait time.Duration
	// WriteHold bounds how long a read that finds the Oracle idle (no
	// fetch in flight, no wait for writes) is held for the next write of
	// this process before its fetch goes out; a write that starts in the
	// hold covers the read, and the Oracle then waits for it as it does
	// for any covering write (WriteWait). The hold actually taken is
	// twice the mean gap between this process's recent writes, and none
	// when that exceeds the bound or writes have stopped, so a process
	// that writes rarely fetches at once. Reads that arrive while a fetch
	// is in flight are never held, so a read-heavy process keeps its
	// throughput. Zero: DefaultWriteHold. Negative: never hold.
	WriteHold time.Duration

	// UnsafeSerializable makes the fetch a serializable read: the member
	// answers from its own state, without asking the leader. Its revision
	// can be stale if the member is cut off from the majority, and then
	// "fresh" reads are stale. It exists only so that tests can show that
	// failure side by side with the linearizable fetch. Never set it in
	// production.
	UnsafeSerializable bool
}

// Stats counts what an Oracle did since it was created.
type Stats struct {
	// Fetches is the number of fetches sent to etcd; FailedFetches of those
	// failed (abandoned ones included).
	Fetches, FailedFetches uint64
	// Reads is the number of Revision calls answered by a fetch, with a
	// revision or an error.
	Reads uint64
	// ReadsFromWrites is the number of Revision calls answered by a
	// write's revision (Write.Succeeded) before any fetch answered them.
	ReadsFromWrites uint64
	// Holds is the number of rounds held for a write (Options.WriteHold);
	// HeldByWrites of those were covered by a write before the hold ended.
	Holds, HeldByWrites uint64
}

// Oracle hands out etcd revisions R such that every write that completed
// before the Revision call has a revision <= R. One Oracle serves every
// resource that uses the same etcd client. It is safe for concurrent use.
type Oracle struct {
	// get performs one revision fetch.
	get  func(ctx context.Context) (int64, error)
	opts Options

	// ctx is cancelled by Close; every fetch's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // running fetch goroutines

	fetches, failed, reads, fromWrites, holds, heldByWrites atomic.Uint64

	// ledger records this process's writes to the cluster (Ledger).
	ledger *Ledger

	// recent remembers the latest answered fetches and writes, for
	// RecentRevision.
	recent recentAnswers

	// now reads the clock for the write-gap estimate behind the hold and
	// for the send times of RecentRevision's answers (time.Now; tests
	// replace it before the first call).
	now func() time.Time
	// afterFunc arms the timer of a hold or a wait for writes
	// (time.AfterFunc; tests replace it before the first call, to fire a
	// timer when they choose).
	afterFunc func(time.Duration, func()) *time.Timer

	// testJoined, if set, is called under mu each time a caller joins a
	// round while a fetch is in flight or not (inFlight). Tests use it
	// to wait for callers without sleeping.
	testJoined func(inFlight bool)

	mu struct {
		sync.Mutex
		// open holds every round not yet answered, oldest first. Round
		// ids grow in that order.
		open   []*round
		lastID uint64
		// join is the round a new caller joins, or nil: then the caller
		// starts a new one. A fetch's start and a write's start clear it,
		// so that no caller joins a round after the request that will
		// answer it was sent.
		join *round
		// inFlight is the fetch running, or nil. At most one runs.
		inFlight *fetch
		// writes are the writes in flight (WriteStarting), each covering
		// the rounds up to its id.
		writes []*Write
		// deferred, if set, ends a wait for writes (see scheduleLocked)
		// with a fetch.
		deferred *time.Timer
		// waitGen numbers the timers armWaitLocked starts; deferred is
		// the one numbered waitGen.
		waitGen uint64
		// holding: deferred is a hold (Options.WriteHold) of the one
		// open round, not yet covered by a write.
		holding bool
		// rtt is a moving mean of fetch round trips, the default bound of
		// that wait.
		rtt time.Duration
		// lastWrite is when the latest write started, writeGap a moving
		// mean of the gaps between writes, writesSeen how many started
		// (counting stops at minWritesForHold).
		lastWrite  time.Time
		writeGap   time.Duration
		writesSeen int
		closed     bool
	}
}

// New returns an Oracle that fetches revisions through client. It does not
// own client: Close leaves it open.
func New(client *clientv3.Client, opts Options) (*Oracle, error) {
	if client == nil {
		return nil, errors.New("oracle: nil etcd client")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// Count only: etcd answers with a header and a count, no keys or
	// values. Linearizable unless UnsafeSerializable: etcd confirms with
	// the leader (ReadIndex) that the member has applied every committed
	// write before it answers.
	ops := []clientv3.OpOption{clientv3.WithCountOnly()}
	if opts.UnsafeSerializable {
		ops = append(ops, clientv3.WithSerializable())
	}
	kv, key := client.KV, opts.Key
	get := func(ctx context.Context) (int64, error) {
		resp, err := kv.Get(ctx, key, ops...)
		if err != nil {
			return 0, err
		}
		if resp.Header == nil {
			return 0, errors.New("response without header")
		}
		return resp.Header.Revision, nil
	}
	return buildOracle(get, opts), nil
}

// NewFromFunc returns an Oracle whose fetch is get, which must return a
// revision R such that every write that completed before get was called
// has a revision <= R (a linearizable read). It serves embedders that hold
// no etcd client, e.g. a cache built over a storage.Interface alone, with
// storage.Interface.GetCurrentResourceVersion as get. Options.Key and
// UnsafeSerializable are ignored.
func NewFromFunc(get func(ctx context.Context) (int64, error), opts Options) (*Oracle, error) {
	if get == nil {
		return nil, errors.New("oracle: nil fetch func")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return buildOracle(get, opts), nil
}

func buildOracle(get func(ctx context.Context) (int64, error), opts Options) *Oracle {
	o := &Oracle{get: get, opts: opts, now: time.Now, afterFunc: time.AfterFunc, ledger: NewLedger()}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	return o
}

// Ledger returns the record of this process's writes to the Oracle's etcd
// cluster, which every cache of the cluster shares (see Ledger).
func (o *Oracle) Ledger() *Ledger { return o.ledger }

func (opts Options) withDefaults() (Options, error) {
	if opts.FetchTimeout < 0 {
		return opts, fmt.Errorf("oracle: negative FetchTimeout %v", opts.FetchTimeout)
	}
	if opts.Key == "" {
		opts.Key = DefaultKey
	}
	if opts.FetchTimeout == 0 {
		opts.FetchTimeout = DefaultFetchTimeout
	}
	if opts.Recorder == nil {
		opts.Recorder = noopRecorder{}
	}
	return opts, nil
}

// Revision returns a revision R from a fetch issued after the call began, or
// from a write of this process sent after it began (see Write). So every
// write that completed before Revision was called has a revision <= R.
//
// If a fetch is in flight, the call waits for it to end and then for the next
// one, which it shares with every caller that arrived meanwhile. It returns
// when the fetch (or such a write) answers, or when ctx is done (wrapping
// ctx.Err()), or with an error wrapping ErrFetchFailed if the fetch fails. It
// never returns a revision from a request sent before it was called.
func (o *Oracle) Revision(ctx context.Context) (int64, error) {
	return o.RevisionFor(ctx, 1)
}

// RevisionFor is Revision for a caller that stands for reads client reads
// (a cache's freshness driver asks once for every read its own fetch
// covers). reads only feeds Stats and the Recorder, so that
// reads_per_revision_fetch counts client reads, not callers. Values below 1
// count as 1.
func (o *Oracle) RevisionFor(ctx context.Context, reads int) (int64, error) {
	if reads < 1 {
		reads = 1
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("oracle: waiting for a revision: %w", err)
	}
	o.mu.Lock()
	if o.mu.closed {
		o.mu.Unlock()
		return 0, ErrClosed
	}
	r := o.mu.join
	if r == nil {
		o.mu.lastID++
		r = &round{done: make(chan struct{}), id: o.mu.lastID}
		o.mu.join = r
		o.mu.open = append(o.mu.open, r)
		o.maybeHoldLocked()
	}
	r.waiters++
	r.reads += reads
	if o.testJoined != nil {
		o.testJoined(o.mu.inFlight != nil)
	}
	// No write in flight covers r (it has not sealed it yet), so this
	// fetches at once unless one is in flight or r is held.
	o.scheduleLocked(true)
	o.mu.Unlock()

	select {
	case <-r.done:
		return r.rev, r.err
	case <-ctx.Done():
		if o.leave(r, reads) {
			return r.rev, r.err // answered as ctx ended; the answer counted this read
		}
		return 0, fmt.Errorf("oracle: waiting for a revision: %w", ctx.Err())
	}
}

// Stats returns the Oracle's counters.
func (o *Oracle) Stats() Stats {
	return Stats{
		Fetches:         o.fetches.Load(),
		FailedFetches:   o.failed.Load(),
		Reads:           o.reads.Load(),
		ReadsFromWrites: o.fromWrites.Load(),
		Holds:           o.holds.Load(),
		HeldByWrites:    o.heldByWrites.Load(),
	}
}

// Close aborts the fetch in flight, fails every waiting caller with an error
// wrapping ErrClosed, makes later calls return ErrClosed, and waits for the
// fetch goroutine to end. It does not close the etcd client. It is
// idempotent.
func (o *Oracle) Close() {
	o.mu.Lock()
	if !o.mu.closed {
		o.mu.closed = true
		o.stopWaitLocked()
		for _, r := range append([]*round(nil), o.mu.open...) {
			if r.fetch == nil {
				o.answerLocked(r, 0, ErrClosed)
			}
		}
		o.mu.writes = nil
	}
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
}
