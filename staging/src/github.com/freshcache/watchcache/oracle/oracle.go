package oracle

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/freshcache/watchcache/metrics"
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
// for concurrent use. metrics.OracleRecorder implements it on the
// component-base legacy registry.
type Recorder interface {
	// FetchDone is called once for every fetch sent to etcd, when it ends.
	// reads is the number of Revision calls it answered (with a revision or
	// an error); zero if every caller gave up first. took is the fetch's
	// round trip, from just before the request was sent to its answer. err
	// is nil on success.
	FetchDone(reads int, took time.Duration, err error)
}

type noopRecorder struct{}

func (noopRecorder) FetchDone(int, time.Duration, error) {}

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

	fetches, failed, reads atomic.Uint64

	// testJoined, if set, is called under mu each time a caller joins a
	// round that is not yet in flight (inFlight reports whether another
	// fetch is running). Tests use it to wait for callers without sleeping.
	testJoined func(inFlight bool)

	mu struct {
		sync.Mutex
		// inFlight is the round whose fetch is running, or nil.
		inFlight *round
		// next collects the callers that arrived while inFlight ran. It is
		// started when inFlight ends, so its fetch is issued after every
		// one of them arrived.
		next   *round
		closed bool
	}
}

// round is one fetch and the callers that share its answer. rev and err are
// written before done is closed and read only after.
type round struct {
	done chan struct{}
	rev  int64
	err  error

	// Guarded by Oracle.mu.
	waiters int                // callers still waiting
	reads   int                // reads those callers stand for (RevisionFor)
	cancel  context.CancelFunc // aborts the fetch; set when started
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
	o := &Oracle{get: get, opts: opts}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	return o
}

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

// Revision returns a revision R from a fetch issued after the call began. So
// every write that completed before Revision was called has a revision <= R.
//
// If a fetch is in flight, the call waits for it to end and then for the next
// one, which it shares with every caller that arrived meanwhile. It returns
// when the fetch answers, or when ctx is done (wrapping ctx.Err()), or with
// an error wrapping ErrFetchFailed if the fetch fails. It never returns a
// revision from a fetch issued before it was called.
func (o *Oracle) Revision(ctx context.Context) (int64, error) {
	return o.RevisionFor(ctx, 1)
}

// RevisionFor is Revision for a caller that stands for reads client reads
// (a cache's freshness driver asks once for every read its own fetch
// covers). reads only feeds Stats.Reads and Recorder.FetchDone, so that
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
	r := o.mu.next
	if r == nil {
		r = &round{done: make(chan struct{})}
		o.mu.next = r
	}
	r.waiters++
	r.reads += reads
	if o.testJoined != nil {
		o.testJoined(o.mu.inFlight != nil)
	}
	if o.mu.inFlight == nil {
		o.startLocked()
	}
	o.mu.Unlock()

	select {
	case <-r.done:
		return r.rev, r.err
	case <-ctx.Done():
		if o.leave(r, reads) {
			return r.rev, r.err // answered as ctx ended; the fetch counted this read
		}
		return 0, fmt.Errorf("oracle: waiting for a revision: %w", ctx.Err())
	}
}

// startLocked sends the fetch for o.mu.next. Every caller in it joined under
// o.mu before this point, so the request goes out after all of them arrived.
func (o *Oracle) startLocked() {
	r := o.mu.next
	o.mu.next = nil
	o.mu.inFlight = r
	ctx, cancel := context.WithTimeout(o.ctx, o.opts.FetchTimeout)
	r.cancel = cancel
	o.wg.Add(1)
	go metrics.Labeled(metrics.ProfileFetch, func() { o.fetch(ctx, r) })
}

func (o *Oracle) fetch(ctx context.Context, r *round) {
	defer o.wg.Done()
	start := time.Now()
	region := trace.StartRegion(ctx, TraceRegionFetch)
	rev, err := o.get(ctx)
	region.End()
	took := time.Since(start)
	// Before cancel: only FetchTimeout's deadline makes this
	// DeadlineExceeded (Close and leave cancel ctx).
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	r.cancel()

	o.mu.Lock()
	switch {
	case err != nil && o.mu.closed:
		r.err = fmt.Errorf("%w: %w", ErrClosed, err)
	case err != nil && timedOut:
		r.err = fmt.Errorf("%w: %w (%v): %w", ErrFetchFailed, ErrFetchTimedOut, o.opts.FetchTimeout, err)
	case err != nil:
		r.err = fmt.Errorf("%w: %w", ErrFetchFailed, err)
	default:
		r.rev = rev
	}
	reads := r.reads
	close(r.done)
	o.mu.inFlight = nil
	if o.mu.next != nil && !o.mu.closed {
		o.startLocked()
	}
	o.mu.Unlock()

	o.fetches.Add(1)
	if err != nil {
		o.failed.Add(1)
	}
	o.reads.Add(uint64(reads))
	o.opts.Recorder.FetchDone(reads, took, err)
}

// leave is called by a caller that gave up on r. A round nobody waits for is
// dropped before it starts, or aborted if it is in flight: no later caller
// may use its answer anyway. It reports whether r was answered meanwhile.
func (o *Oracle) leave(r *round, reads int) (answered bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-r.done:
		return true
	default:
	}
	r.waiters--
	r.reads -= reads
	if r.waiters > 0 {
		return false
	}
	switch r {
	case o.mu.next:
		o.mu.next = nil
	case o.mu.inFlight:
		r.cancel()
	}
	return false
}

// Stats returns the Oracle's counters.
func (o *Oracle) Stats() Stats {
	return Stats{Fetches: o.fetches.Load(), FailedFetches: o.failed.Load(), Reads: o.reads.Load()}
}

// Close aborts the fetch in flight, fails every waiting caller with an error
// wrapping ErrClosed, makes later calls return ErrClosed, and waits for the
// fetch goroutine to end. It does not close the etcd client. It is
// idempotent.
func (o *Oracle) Close() {
	o.mu.Lock()
	if !o.mu.closed {
		o.mu.closed = true
		if r := o.mu.next; r != nil {
			o.mu.next = nil
			r.err = ErrClosed
			close(r.done)
		}
	}
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
}
