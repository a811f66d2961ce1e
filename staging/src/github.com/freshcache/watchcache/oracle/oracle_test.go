package oracle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/freshcache/watchcache/metrics"
)

// The component-base recorder plugs into Options.Recorder.
var _ Recorder = (*metrics.OracleRecorder)(nil)

// waitLimit bounds every wait in these tests. It is a hang detector, not a
// speed assertion.
const waitLimit = 30 * time.Second

// gatedKV wraps the real etcd KV. While hold is set, each Get goes to etcd,
// gets its answer, and then waits for the test to release it. That lets a
// test act (write, add callers) while a fetch that etcd has already answered
// is still in flight, the window the issued-after-arrival rule is about.
type gatedKV struct {
	clientv3.KV
	gets atomic.Int64
	hold atomic.Bool
	held chan heldGet
}

type heldGet struct {
	rev     int64
	release chan struct{}
}

func newGatedKV(c *clientv3.Client) *gatedKV {
	g := &gatedKV{KV: c.KV, held: make(chan heldGet, 16)}
	c.KV = g
	return g
}

func (g *gatedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	g.gets.Add(1)
	resp, err := g.KV.Get(ctx, key, opts...)
	if err != nil || !g.hold.Load() {
		return resp, err
	}
	h := heldGet{rev: resp.Header.Revision, release: make(chan struct{})}
	g.held <- h
	select {
	case <-h.release:
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next waits for the next held fetch.
func (g *gatedKV) next(t *testing.T) heldGet {
	t.Helper()
	select {
	case h := <-g.held:
		return h
	case <-time.After(waitLimit):
		t.Fatal("no fetch reached etcd")
		return heldGet{}
	}
}

type fetchRecord struct {
	reads int
	took  time.Duration
	err   error
}

// record is a list that the oracle's goroutines append to and a test reads
// a copy of.
type record[T any] struct {
	mu    sync.Mutex
	items []T
}

func (l *record[T]) add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
}

func (l *record[T]) all() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// recorder is the oracle's metrics, as records.
type recorder struct {
	fetches record[fetchRecord]
	writes  record[int]    // reads answered, one per WriteAnswered
	holds   record[string] // outcomes, one per HoldEnded
}

func (r *recorder) HoldEnded(outcome string) { r.holds.add(outcome) }
func (r *recorder) holdOutcomes() []string   { return r.holds.all() }
func (r *recorder) WriteAnswered(reads int)  { r.writes.add(reads) }
func (r *recorder) answeredByWrites() []int  { return r.writes.all() }
func (r *recorder) get() []fetchRecord       { return r.fetches.all() }
func (r *recorder) FetchDone(reads int, took time.Duration, err error) {
	r.fetches.add(fetchRecord{reads, took, err})
}

// startGated starts an etcd and, on it, an Oracle with opts whose fetches
// the returned gate holds; joined receives one value per caller that joins
// a round while another fetch is in flight (joins).
func startGated(t *testing.T, opts Options) (c *clientv3.Client, g *gatedKV, o *Oracle, joined <-chan struct{}) {
	t.Helper()
	_, c = startEtcd(t)
	g = newGatedKV(c)
	o = newOracle(t, c, opts)
	joined = joins(o)
	g.hold.Store(true)
	return c, g, o, joined
}

// joins returns a channel that receives one value per caller joining a
// round while another fetch is in flight.
func joins(o *Oracle) <-chan struct{} {
	ch := make(chan struct{}, 1024)
	o.testJoined = func(inFlight bool) {
		if inFlight {
			ch <- struct{}{}
		}
	}
	return ch
}

func waitJoins(t *testing.T, ch <-chan struct{}, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for range n {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("fewer than %d callers joined", n)
		}
	}
}

type result struct {
	rev int64
	err error
}

func goRevision(ctx context.Context, o *Oracle) <-chan result {
	ch := make(chan result, 1)
	go func() {
		rev, err := o.Revision(ctx)
		ch <- result{rev, err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatal("Revision did not return")
		return result{}
	}
}

func newOracle(t *testing.T, c *clientv3.Client, opts Options) *Oracle {
	t.Helper()
	o, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

func TestRevisionCoversCompletedWrites(t *testing.T) {
	_, c := startEtcd(t)
	o := newOracle(t, c, Options{})
	for i := range 5 {
		w := put(t, c, fmt.Sprintf("/k/%d", i))
		rev, err := o.Revision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rev < w {
			t.Fatalf("Revision()=%d, but a write completed before the call at %d", rev, w)
		}
	}
	if st := o.Stats(); st.Fetches != 5 || st.Reads != 5 || st.FailedFetches != 0 {
		t.Fatalf("stats %+v, want 5 sequential fetches", st)
	}
}

// A caller that arrives while a fetch is in flight must not get that fetch's
// answer: a write may have completed between the fetch and the call.
func TestIssuedAfterArrival(t *testing.T) {
	rec := &recorder{}
	c, g, o, joined := startGated(t, Options{Recorder: rec})

	a := goRevision(context.Background(), o)
	first := g.next(t) // etcd answered fetch 1; the answer is held
	putStart := time.Now()
	w := put(t, c, "/written-after-fetch-1")
	putTook := time.Since(putStart)
	if w <= first.rev {
		t.Fatalf("write at %d not after fetch 1's answer %d", w, first.rev)
	}
	b := goRevision(context.Background(), o) // arrives after the write completed
	waitJoins(t, joined, 1)
	close(first.release)

	if r := await(t, a); r.err != nil || r.rev != first.rev {
		t.Fatalf("caller A: %+v, want fetch 1's %d", r, first.rev)
	}
	second := g.next(t)
	close(second.release)
	r := await(t, b)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.rev < w || r.rev != second.rev {
		t.Fatalf("caller B got %d; it must come from fetch 2 (%d) and cover the write at %d", r.rev, second.rev, w)
	}
	got := rec.get()
	if len(got) != 2 || got[0].reads != 1 || got[1].reads != 1 {
		t.Fatalf("recorded fetches %+v", got)
	}
	// Fetch 1 was sent before the write began and answered after it ended.
	if got[0].took < putTook {
		t.Errorf("fetch 1 recorded a round trip of %v, shorter than the write (%v) it spanned", got[0].took, putTook)
	}
}

// 64 concurrent callers: one is covered by the first fetch, the 63 that
// arrive while it is in flight share the second.
func TestCoalescing(t *testing.T) {
	const callers = 64
	rec := &recorder{}
	c, g, o, joined := startGated(t, Options{Recorder: rec})

	results := make([]<-chan result, callers)
	writes := make([]int64, callers)
	results[0] = goRevision(context.Background(), o)
	first := g.next(t)
	for i := 1; i < callers; i++ {
		writes[i] = put(t, c, fmt.Sprintf("/coalesce/%d", i))
		results[i] = goRevision(context.Background(), o)
	}
	waitJoins(t, joined, callers-1)
	close(first.release)
	second := g.next(t)
	close(second.release)

	for i, ch := range results {
		r := await(t, ch)
		if r.err != nil {
			t.Fatalf("caller %d: %v", i, r.err)
		}
		if r.rev < writes[i] {
			t.Fatalf("caller %d got %d, before its own write at %d", i, r.rev, writes[i])
		}
	}
	st := o.Stats()
	if st.Fetches >= callers || st.Fetches != 2 || st.Reads != callers {
		t.Fatalf("stats %+v: want 2 fetches serving %d reads", st, callers)
	}
	if n := g.gets.Load(); n != 2 {
		t.Fatalf("etcd saw %d Gets, want 2", n)
	}
	if got := rec.get(); len(got) != 2 || got[0].reads != 1 || got[1].reads != callers-1 {
		t.Fatalf("recorded fetches %+v", got)
	}
}

// Without any gate: 64 goroutines, each writes then asks for a revision, in
// several waves. Every answer covers the caller's own write, and no caller
// is left behind.
func TestConcurrentCallersSeeTheirWrites(t *testing.T) {
	const callers, waves = 64, 5
	_, c := startEtcd(t)
	o := newOracle(t, c, Options{})
	for wave := range waves {
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := writeThenRead(c, o, fmt.Sprintf("/wave/%d/%d", wave, i), "v"); err != nil {
					errs <- fmt.Errorf("caller %d: %w", i, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	st := o.Stats()
	if st.Reads != callers*waves || st.Fetches > st.Reads {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("%d reads, %d fetches (%.1f reads per fetch)", st.Reads, st.Fetches, float64(st.Reads)/float64(st.Fetches))
}

func TestCancellation(t *testing.T) {
	_, c := startEtcd(t)
	g := newGatedKV(c)
	o := newOracle(t, c, Options{})
	joined := joins(o)
	// Warm the connection so that the leak check sees only what the
	// Oracle starts.
	if _, err := o.Revision(context.Background()); err != nil {
		t.Fatal(err)
	}
	ignore := goleak.IgnoreCurrent()

	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		before := o.Stats()
		if _, err := o.Revision(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("err=%v, want context.Canceled", err)
		}
		if o.Stats() != before {
			t.Fatal("a cancelled call issued a fetch")
		}
	})

	t.Run("while its fetch is in flight", func(t *testing.T) {
		g.hold.Store(true)
		defer g.hold.Store(false)
		before := o.Stats()
		ctx, cancel := context.WithCancel(context.Background())
		res := goRevision(ctx, o)
		g.next(t) // held, and never released by the test
		cancel()
		if r := await(t, res); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("result %+v, want context.Canceled", r)
		}
		// Its only caller left, so the fetch was aborted: the gate
		// returns on the fetch's ctx.Done without a release.
		waitStats(t, o, func(st Stats) bool { return st.Fetches == before.Fetches+1 })
		if st := o.Stats(); st.FailedFetches != before.FailedFetches+1 || st.Reads != before.Reads {
			t.Fatalf("stats %+v after an abandoned fetch (before %+v)", st, before)
		}
	})

	t.Run("while waiting for the next fetch", func(t *testing.T) {
		g.hold.Store(true)
		defer g.hold.Store(false)
		before := o.Stats()
		a := goRevision(context.Background(), o)
		h := g.next(t)
		ctx, cancel := context.WithCancel(context.Background())
		b := goRevision(ctx, o)
		waitJoins(t, joined, 1)
		cancel()
		if r := await(t, b); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("result %+v, want context.Canceled", r)
		}
		close(h.release)
		if r := await(t, a); r.err != nil {
			t.Fatal(r.err)
		}
		// Nobody was left for the next round, so no second fetch.
		waitStats(t, o, func(st Stats) bool { return st.Fetches == before.Fetches+1 })
		o.mu.Lock()
		open, inFlight := len(o.mu.open), o.mu.inFlight
		o.mu.Unlock()
		if open != 0 || inFlight != nil {
			t.Fatalf("round left behind: %d open, inFlight=%v", open, inFlight)
		}
	})

	o.Close()
	goleak.VerifyNone(t, ignore)
}

// waitStats waits until cond holds for the Oracle's stats. The fetch
// goroutine updates them just after it wakes its callers.
func waitStats(t *testing.T, o *Oracle, cond func(Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond(o.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v never satisfied the condition", o.Stats())
		}
		<-tick.C
	}
}

func TestFetchFailure(t *testing.T) {
	t.Run("client closed", func(t *testing.T) {
		_, c := startEtcd(t)
		rec := &recorder{}
		o := newOracle(t, c, Options{Recorder: rec})
		if _, err := o.Revision(context.Background()); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_, err := o.Revision(ctx)
		if !errors.Is(err, ErrFetchFailed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrFetchTimedOut) {
			t.Fatalf("err=%v, want ErrFetchFailed from the closed client, not a timeout", err)
		}
		// The fetch is recorded once its callers are answered: wait for it.
		deadline := time.Now().Add(waitLimit)
		got := rec.get()
		for len(got) < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			got = rec.get()
		}
		if len(got) != 2 || got[1].err == nil || got[1].reads != 1 {
			t.Fatalf("recorded %+v", got)
		}
	})

	t.Run("etcd stopped", func(t *testing.T) {
		e, c := startEtcd(t)
		o := newOracle(t, c, Options{FetchTimeout: time.Second})
		if _, err := o.Revision(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.stop()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		// Several callers, one fetch: all of them fail, none hangs.
		var chs []<-chan result
		for range 8 {
			chs = append(chs, goRevision(ctx, o))
		}
		for _, ch := range chs {
			r := await(t, ch)
			if !errors.Is(r.err, ErrFetchFailed) || r.rev != 0 {
				t.Fatalf("result %+v, want ErrFetchFailed and no revision", r)
			}
		}
	})
}

// TestFetchTimedOut tells a fetch that got no answer within FetchTimeout
// from one that etcd (or the client) refused: only the first wraps
// ErrFetchTimedOut, and both wrap ErrFetchFailed.
func TestFetchTimedOut(t *testing.T) {
	refused := errors.New("etcdserver: permission denied")
	for _, tc := range []struct {
		name     string
		get      func(ctx context.Context) (int64, error)
		timedOut bool
	}{
		{"held until the fetch timeout", func(ctx context.Context) (int64, error) { <-ctx.Done(); return 0, ctx.Err() }, true},
		{"refused", func(context.Context) (int64, error) { return 0, refused }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := NewFromFunc(tc.get, Options{FetchTimeout: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			_, err = o.Revision(ctx)
			if !errors.Is(err, ErrFetchFailed) || errors.Is(err, ErrFetchTimedOut) != tc.timedOut {
				t.Fatalf("err=%v: want ErrFetchFailed, ErrFetchTimedOut %v", err, tc.timedOut)
			}
			if !tc.timedOut && !errors.Is(err, refused) {
				t.Fatalf("err=%v does not wrap the refusal", err)
			}
		})
	}
}

func TestClose(t *testing.T) {
	_, g, o, joined := startGated(t, Options{})
	a := goRevision(context.Background(), o)
	g.next(t) // never released: Close aborts it
	b := goRevision(context.Background(), o)
	waitJoins(t, joined, 1)
	o.Close()
	for name, ch := range map[string]<-chan result{"in flight": a, "next": b} {
		if r := await(t, ch); !errors.Is(r.err, ErrClosed) {
			t.Fatalf("%s caller: %+v, want ErrClosed", name, r)
		}
	}
	if _, err := o.Revision(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	o.Close() // idempotent
}

func TestNewValidates(t *testing.T) {
	_, c := startEtcd(t)
	for _, tc := range []struct {
		name   string
		client *clientv3.Client
		opts   Options
		ok     bool
	}{
		{"defaults", c, Options{}, true},
		{"nil client", nil, Options{}, false},
		{"negative timeout", c, Options{FetchTimeout: -time.Second}, false},
	} {
		o, err := New(tc.client, tc.opts)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err=%v", tc.name, err)
		}
		if o != nil {
			if o.opts.Key != DefaultKey || o.opts.FetchTimeout != DefaultFetchTimeout {
				t.Fatalf("%s: defaults not applied: %+v", tc.name, o.opts)
			}
			o.Close()
		}
	}
}

func TestRegistry(t *testing.T) {
	e, c := startEtcd(t)
	r := NewRegistry(Options{})
	endpoint := e.endpoint
	key := EndpointsKey([]string{endpoint, endpoint})
	if key != EndpointsKey([]string{endpoint}) {
		t.Fatalf("EndpointsKey does not de-duplicate: %q", key)
	}
	var dialled []*clientv3.Client
	dial := func() (*clientv3.Client, string, error) {
		cl, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
		dialled = append(dialled, cl)
		return cl, "a note", err
	}
	l1, err := r.Acquire(key, dial)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := r.Acquire(key, dial)
	if err != nil {
		t.Fatal(err)
	}
	o1, o2, release1, release2 := l1.Oracle, l2.Oracle, l1.Release, l2.Release
	if o1 != o2 || len(dialled) != 1 {
		t.Fatalf("two resources got different oracles (%p, %p) or dialled %d clients", o1, o2, len(dialled))
	}
	if l1.Note != "a note" || l2.Note != "a note" {
		t.Fatalf("notes %q, %q: the dial's note must stay with the entry", l1.Note, l2.Note)
	}
	if _, err := o1.Revision(context.Background()); err != nil {
		t.Fatal(err)
	}
	release1()
	release1() // idempotent: must not drop the other reference
	if _, err := o2.Revision(context.Background()); err != nil {
		t.Fatalf("oracle closed while still referenced: %v", err)
	}
	release2()
	if r.Len() != 0 {
		t.Fatalf("registry holds %d oracles after the last release", r.Len())
	}
	if _, err := o2.Revision(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after the last release: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := dialled[0].Get(ctx, "x"); err == nil {
		t.Fatal("the registry's client is still open after the last release")
	}

	// ForClient shares by pointer and leaves the client open.
	l3, _ := r.ForClient(c)
	l4, _ := r.ForClient(c)
	if l3.Oracle != l4.Oracle {
		t.Fatal("ForClient returned two oracles for one client")
	}
	l3.Release()
	l4.Release()
	if _, err := c.Get(context.Background(), "x"); err != nil {
		t.Fatalf("ForClient closed a client it does not own: %v", err)
	}

	if _, err := r.Acquire("broken", func() (*clientv3.Client, string, error) { return nil, "", errors.New("no route") }); err == nil || r.Len() != 0 {
		t.Fatalf("failed dial: err=%v len=%d", err, r.Len())
	}
	if first, second := Shared(), Shared(); first != second {
		t.Fatal("Shared is not one registry")
	}
}

// TestRegistryDialsOutsideTheLock: a dial that hangs (an unreachable
// cluster, up to its dial and check timeouts) holds back only the Acquires
// of its own cluster, never another cluster's; and those that waited for a
// failed dial fail with it.
func TestRegistryDialsOutsideTheLock(t *testing.T) {
	e, _ := startEtcd(t)
	r := NewRegistry(Options{})
	hang := make(chan struct{})
	hanging := make(chan struct{})
	slowErr := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := r.Acquire("unreachable", func() (*clientv3.Client, string, error) {
				close(hanging) // only the first Acquire dials
				<-hang
				return nil, "", errors.New("dial timed out")
			})
			slowErr <- err
		}()
	}
	<-hanging
	l, err := r.Acquire("reachable", func() (*clientv3.Client, string, error) {
		cl, err := clientv3.New(clientv3.Config{Endpoints: []string{e.endpoint}, DialTimeout: 10 * time.Second})
		return cl, "", err
	})
	if err != nil {
		t.Fatalf("another cluster's Acquire while one dial hangs: %v", err)
	}
	l.Release()
	// Both Acquires of the unreachable cluster must be on its one dial
	// before it fails: one that came later would dial again.
	deadline := time.Now().Add(10 * time.Second)
	for refs := 0; refs != 2; {
		r.mu.Lock()
		if e := r.mu.entries["unreachable"]; e != nil {
			refs = e.refs
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%d Acquires wait for the hanging dial, want 2", refs)
		}
		time.Sleep(time.Millisecond)
	}
	close(hang)
	for range 2 {
		if err := <-slowErr; err == nil {
			t.Fatal("an Acquire of the cluster whose dial failed succeeded")
		}
	}
	if r.Len() != 0 {
		t.Fatalf("%d entries left after the failed dial", r.Len())
	}
}

// BenchmarkRevision measures Revision under parallel callers against a real
// etcd, and reports how many reads one fetch served.
func BenchmarkRevision(b *testing.B) {
	_, c := startEtcd(b)
	o, err := New(c, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := o.Revision(context.Background()); err != nil {
				b.Error(err)
				return
			}
		}
	})
	st := o.Stats()
	b.ReportMetric(float64(st.Reads)/float64(max(st.Fetches, 1)), "reads/fetch")
}

// writeThenRead writes key and then asks o for a revision, which must
// cover the write it saw complete.
func writeThenRead(c *clientv3.Client, o *Oracle, key, val string) error {
	resp, err := c.Put(context.Background(), key, val)
	if err != nil {
		return err
	}
	rev, err := o.Revision(context.Background())
	if err != nil {
		return err
	}
	if rev < resp.Header.Revision {
		return fmt.Errorf("revision %d before its write %d", rev, resp.Header.Revision)
	}
	return nil
}
