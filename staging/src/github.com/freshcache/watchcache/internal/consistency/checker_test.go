package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/consistency"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// longWait bounds waits for conditions; no healthy run reaches it.
const longWait = 30 * time.Second

func off() *bool { b := false; return &b }

// countingLister records the GetList calls a checker makes on the etcd3
// store, and can hold them until their context ends.
type countingLister struct {
	inner storage.Interface
	block bool

	mu    sync.Mutex
	calls []storage.ListOptions
	// entered is signalled on every call.
	entered chan struct{}
}

func newCountingLister(s storage.Interface) *countingLister {
	return &countingLister{inner: s, entered: make(chan struct{}, 100)}
}

func (l *countingLister) GetList(ctx context.Context, key string, opts storage.ListOptions, out runtime.Object) error {
	l.mu.Lock()
	l.calls = append(l.calls, opts)
	l.mu.Unlock()
	l.entered <- struct{}{}
	if l.block {
		<-ctx.Done()
		return ctx.Err()
	}
	if l.inner == nil {
		return errors.New("no etcd behind this lister")
	}
	return l.inner.GetList(ctx, key, opts, out)
}

func (l *countingLister) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls)
}

// etcdEnv is an embedded etcd with its etcd3 store of example pods (the
// cache in front has its own detector off: only the checkers under test
// list).
func etcdEnv(t *testing.T) *cachetest.Env {
	t.Helper()
	return cachetest.Start(t, cachetest.WithOptions(watchcache.Options{InconsistencyDetection: off()}))
}

func createPods(t *testing.T, s storage.Interface, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		p := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%03d", i)}}
		if err := s.Create(context.Background(), cachetest.PodKey(p), p, &example.Pod{}, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshotOfEtcd lists etcd (quorum read) into a store snapshot, as a
// cache that holds exactly etcd's state would; edit changes it first.
func snapshotOfEtcd(t *testing.T, s storage.Interface, edit func(w *store.Writer)) *store.Snapshot {
	t.Helper()
	list := &example.PodList{}
	if err := s.GetList(context.Background(), "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseUint(list.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	w := store.NewWriter(nil)
	for i := range list.Items {
		p := &list.Items[i]
		prv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
		if _, err := w.Put(&store.Object{Key: cachetest.PodKey(p), RV: prv, Obj: p}); err != nil {
			t.Fatal(err)
		}
	}
	if edit != nil {
		edit(w)
	}
	w.Advance(rv)
	return w.Snapshot()
}

func checkerConfig(l consistency.Lister, snap *store.Snapshot) consistency.Config {
	return consistency.Config{
		Lister:      l,
		Prefix:      "/pods/",
		NewListFunc: cachetest.NewPodList,
		KeyFunc: func(obj runtime.Object) (string, error) {
			return storage.NamespaceKeyFunc("/pods/", obj)
		},
		Versioner: storage.APIObjectVersioner{},
		Target: func() (consistency.Target, error) {
			return consistency.Target{Snapshot: snap, Generation: 7}, nil
		},
		PageSize: 2,
	}
}

// TestConsistencyCheckCostIsOnePaginatedList: a round's etcd cost is one
// paginated list at exactly the snapshot's revision, ceil(n/PageSize)
// GetList calls (at least one), the first at ResourceVersion=R Exact and
// the rest by continue token.
func TestConsistencyCheckCostIsOnePaginatedList(t *testing.T) {
	e := etcdEnv(t)
	created := 0
	for _, tc := range []struct{ objects, pages int }{
		{0, 1}, {1, 1}, {2, 1}, {3, 2}, {4, 2}, {7, 4},
	} {
		t.Run(fmt.Sprintf("%d objects", tc.objects), func(t *testing.T) {
			for ; created < tc.objects; created++ {
				p := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%03d", created)}}
				if err := e.Etcd.Create(context.Background(), cachetest.PodKey(p), p, &example.Pod{}, 0); err != nil {
					t.Fatal(err)
				}
			}
			snap := snapshotOfEtcd(t, e.Etcd, nil)
			l := newCountingLister(e.Etcd)
			rep := consistency.New(checkerConfig(l, snap)).Check(context.Background())
			if rep.Result != consistency.Match || rep.Err != nil {
				t.Fatalf("result %s (%v), want match", rep.Result, rep.Err)
			}
			if rep.Cache.Count != tc.objects || rep.Etcd.Count != tc.objects {
				t.Fatalf("counts cache %d etcd %d, want %d", rep.Cache.Count, rep.Etcd.Count, tc.objects)
			}
			if l.count() != tc.pages || rep.Pages != tc.pages {
				t.Fatalf("%d GetList calls (reported %d), want exactly %d pages", l.count(), rep.Pages, tc.pages)
			}
			if rep.RV != snap.RV() || rep.Generation != 7 {
				t.Fatalf("report at rv %d generation %d, want %d and 7", rep.RV, rep.Generation, snap.RV())
			}
			for i, o := range l.calls {
				first := o.ResourceVersion == strconv.FormatUint(snap.RV(), 10) && o.ResourceVersionMatch == metav1.ResourceVersionMatchExact && o.Predicate.Continue == ""
				next := o.ResourceVersion == "" && o.ResourceVersionMatch == "" && o.Predicate.Continue != ""
				if (i == 0 && !first) || (i > 0 && !next) || o.Predicate.Limit != 2 || !o.Recursive {
					t.Fatalf("call %d: %+v, want the %s page of an Exact list at %d with limit 2", i, o, map[bool]string{true: "first", false: "next"}[i == 0], snap.RV())
				}
			}
		})
	}
}

// TestConsistencyCheckFindsDivergence: a snapshot that differs from etcd
// at its own revision, in any way, is a mismatch that names the first
// differing key, even when etcd has moved on since.
func TestConsistencyCheckFindsDivergence(t *testing.T) {
	e := etcdEnv(t)
	createPods(t, e.Etcd, 5)
	cases := []struct {
		name string
		edit func(w *store.Writer)
		want string
	}{
		{"missing object", func(w *store.Writer) { w.Delete("/pods/ns/p002", w.RV()) }, "/pods/ns/p002: only in etcd"},
		{"extra object", func(w *store.Writer) {
			_, _ = w.Put(&store.Object{Key: "/pods/ns/p002a", RV: 3})
		}, "/pods/ns/p002a: only in the cache (rv 3)"},
		{"stale version", func(w *store.Writer) {
			o, _ := w.Get("/pods/ns/p004")
			_, _ = w.Put(&store.Object{Key: o.Key, RV: o.RV - 1, Obj: o.Obj})
		}, "/pods/ns/p004: rv"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotOfEtcd(t, e.Etcd, tc.edit)
			// etcd moves on: the round still compares at the snapshot's
			// revision.
			if _, err := e.Client.Put(context.Background(), "unrelated", "x"); err != nil {
				t.Fatal(err)
			}
			rep := consistency.New(checkerConfig(newCountingLister(e.Etcd), snap)).Check(context.Background())
			if rep.Result != consistency.Mismatch || rep.First == nil {
				t.Fatalf("result %s (%v), want mismatch", rep.Result, rep.Err)
			}
			if got := rep.First.String(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
				t.Fatalf("first difference %q, want %q...", got, tc.want)
			}
			if rep.Cache == rep.Etcd {
				t.Fatalf("digests agree (%v) on a mismatch", rep.Cache)
			}
		})
	}
}

// TestConsistencyCheckSkipsCompactedRevision: when etcd has compacted the
// snapshot's revision, the round is skipped, not a mismatch.
func TestConsistencyCheckSkipsCompactedRevision(t *testing.T) {
	e := etcdEnv(t)
	createPods(t, e.Etcd, 3)
	snap := snapshotOfEtcd(t, e.Etcd, func(w *store.Writer) { w.Delete("/pods/ns/p000", w.RV()) })
	rev := e.IncreaseRV(context.Background(), t)
	e.Compact(context.Background(), t, strconv.FormatInt(rev, 10))
	rep := consistency.New(checkerConfig(newCountingLister(e.Etcd), snap)).Check(context.Background())
	if rep.Result != consistency.Skipped {
		t.Fatalf("result %s (%v), want skipped", rep.Result, rep.Err)
	}
}

// TestConsistencyCheckSkipsWhenNotReady: a cache that is not ready is not
// compared, and etcd is not asked (there is none).
func TestConsistencyCheckSkipsWhenNotReady(t *testing.T) {
	cases := []struct {
		name   string
		target func() (consistency.Target, error)
		want   consistency.Result
	}{
		{"relisting", func() (consistency.Target, error) {
			return consistency.Target{}, fmt.Errorf("%w: relisting", consistency.ErrNotReady)
		}, consistency.Skipped},
		{"before the first list", func() (consistency.Target, error) {
			return consistency.Target{Snapshot: store.NewWriter(nil).Snapshot()}, nil
		}, consistency.Skipped},
		{"target failed", func() (consistency.Target, error) { return consistency.Target{}, errors.New("boom") }, consistency.Error},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newCountingLister(nil)
			cfg := checkerConfig(l, nil)
			cfg.Target = tc.target
			if rep := consistency.New(cfg).Check(context.Background()); rep.Result != tc.want {
				t.Fatalf("result %s (%v), want %s", rep.Result, rep.Err, tc.want)
			}
			if l.count() != 0 {
				t.Fatalf("%d GetList calls, want none", l.count())
			}
		})
	}
}

// TestConsistencyCheckerRunsOnItsClock: Run waits a period on its clock
// before every round, runs one round at a time and reports each; etcd is
// not listed while it waits. The fake clock is the checker's alone, so its
// waiters are the checker's pause.
func TestConsistencyCheckerRunsOnItsClock(t *testing.T) {
	e := etcdEnv(t)
	createPods(t, e.Etcd, 3) // two pages
	snap := snapshotOfEtcd(t, e.Etcd, nil)
	l := newCountingLister(e.Etcd)
	clk := testingclock.NewFakeClock(time.Now())
	reports := make(chan consistency.Report, 10)
	cfg := checkerConfig(l, snap)
	cfg.Clock, cfg.Period, cfg.Jitter = clk, time.Minute, -1
	cfg.Report = func(r consistency.Report) { reports <- r }
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); consistency.New(cfg).Run(stop) }()

	for round := 1; round <= 3; round++ {
		waitUntil(t, "the checker to pause", clk.HasWaiters)
		if n := l.count(); n != 2*(round-1) {
			t.Fatalf("before round %d: %d GetList calls, want %d", round, n, 2*(round-1))
		}
		clk.Step(time.Minute)
		select {
		case r := <-reports:
			if r.Result != consistency.Match || r.Pages != 2 {
				t.Fatalf("round %d: %s in %d pages (%v), want a match in 2", round, r.Result, r.Pages, r.Err)
			}
		case <-time.After(longWait):
			t.Fatalf("round %d not reported", round)
		}
	}
	close(stop)
	<-done
	if n := l.count(); n != 6 {
		t.Fatalf("%d GetList calls for 3 rounds, want 6", n)
	}
}

// TestConsistencyCheckerStopCancelsRound: closing stop cancels the round in
// flight, which is not reported, and Run returns.
func TestConsistencyCheckerStopCancelsRound(t *testing.T) {
	e := etcdEnv(t)
	l := newCountingLister(e.Etcd)
	l.block = true
	cfg := checkerConfig(l, snapshotOfEtcd(t, e.Etcd, nil))
	cfg.Period, cfg.Jitter = time.Nanosecond, -1
	reported := make(chan consistency.Report, 1)
	cfg.Report = func(r consistency.Report) { reported <- r }
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); consistency.New(cfg).Run(stop) }()
	<-l.entered
	close(stop)
	<-done
	select {
	case r := <-reported:
		t.Fatalf("a cancelled round was reported: %+v", r)
	default:
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(longWait)
	tick := time.NewTicker(time.Millisecond) // paces the poll; the wait is on cond
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
