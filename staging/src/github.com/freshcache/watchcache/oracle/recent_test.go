package oracle

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestRecentAnswersLowest(t *testing.T) {
	at := func(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }
	cases := []struct {
		name    string
		answers []answer
		since   time.Time
		want    int64
		wantOK  bool
	}{
		{name: "none", since: at(0)},
		{name: "all too old", answers: []answer{{at(1), 5}, {at(2), 6}}, since: at(3)},
		{name: "sent exactly at since counts", answers: []answer{{at(3), 7}}, since: at(3), want: 7, wantOK: true},
		{name: "lowest of the recent ones", answers: []answer{{at(1), 2}, {at(5), 9}, {at(4), 8}, {at(6), 10}}, since: at(4), want: 8, wantOK: true},
		{name: "answered out of send order", answers: []answer{{at(9), 20}, {at(5), 12}}, since: at(5), want: 12, wantOK: true},
		{name: "revisions below 1 are not kept", answers: []answer{{at(5), 0}, {at(5), -3}}, since: at(0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r recentAnswers
			for _, a := range tc.answers {
				r.add(a.sent, a.rev)
			}
			got, ok := r.lowest(tc.since)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("lowest(%v) = %d, %v; want %d, %v", tc.since, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// The ring forgets the oldest answer first, whatever its revision.
func TestRecentAnswersRingForgetsOldest(t *testing.T) {
	var r recentAnswers
	for i := range recentCapacity + 1 {
		r.add(epoch.Add(time.Duration(i)*time.Millisecond), int64(i+1))
	}
	if got, ok := r.lowest(epoch); !ok || got != 2 {
		t.Fatalf("lowest after %d answers = %d, %v; want 2 (revision 1 forgotten)", recentCapacity+1, got, ok)
	}
}

// A fetch's answer bounds reads for maxAge after it was sent, a write's as
// well (even one that answered nobody), a failed fetch's never.
func TestRecentRevisionFromFetchesAndWrites(t *testing.T) {
	_, c := startEtcd(t)
	o := newOracle(t, c, Options{WriteHold: -1})
	clk := &fakeClock{t: epoch}
	o.now = clk.now

	if _, ok := o.RecentRevision(time.Second); ok {
		t.Fatal("RecentRevision before any request: ok")
	}
	w1 := put(t, c, "/recent/1")
	rev, err := o.Revision(context.Background()) // sent at epoch
	if err != nil {
		t.Fatal(err)
	}
	if rev < w1 {
		t.Fatalf("Revision = %d below a completed write at %d", rev, w1)
	}
	clk.set(epoch.Add(100 * time.Millisecond))
	if got, ok := o.RecentRevision(100 * time.Millisecond); !ok || got != rev {
		t.Fatalf("RecentRevision(100ms) at the bound = %d, %v; want the fetch's %d", got, ok, rev)
	}
	if _, ok := o.RecentRevision(99 * time.Millisecond); ok {
		t.Fatal("RecentRevision(99ms) 100ms after the only fetch was sent: ok")
	}
	if _, ok := o.RecentRevision(0); ok {
		t.Fatal("RecentRevision(0): ok")
	}

	// A write nobody waits for, sent now, bounds reads from now on.
	w := o.WriteStarting()
	committed := put(t, c, "/recent/2")
	w.Succeeded(committed)
	clk.set(epoch.Add(150 * time.Millisecond))
	if got, ok := o.RecentRevision(60 * time.Millisecond); !ok || got != committed {
		t.Fatalf("RecentRevision after a write = %d, %v; want the write's %d", got, ok, committed)
	}
	// Both are recent at 200ms: the lower, the fetch's, is returned.
	if got, ok := o.RecentRevision(200 * time.Millisecond); !ok || got != rev {
		t.Fatalf("RecentRevision(200ms) = %d, %v; want the lower %d", got, ok, rev)
	}
	// A write that failed bounds nothing.
	clk.set(epoch.Add(time.Second))
	o.WriteStarting().Failed()
	if _, ok := o.RecentRevision(time.Millisecond); ok {
		t.Fatal("RecentRevision after a failed write: ok")
	}
}

func TestRecentRevisionIgnoresFailedFetches(t *testing.T) {
	calls := 0
	o, err := NewFromFunc(func(context.Context) (int64, error) {
		calls++
		return 0, fmt.Errorf("etcd is away")
	}, Options{WriteHold: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.Revision(context.Background()); err == nil {
		t.Fatal("Revision: no error from a failing fetch")
	}
	if _, ok := o.RecentRevision(time.Hour); ok || calls != 1 {
		t.Fatalf("RecentRevision after a failed fetch: ok=%v (fetches %d)", ok, calls)
	}
}

// The guarantee end to end, on real etcd and the real clock: a revision
// RecentRevision(maxAge) returns at time t covers every write acknowledged
// before t - maxAge. Writers write through etcd and announce every other
// write to the Oracle; readers ask for a revision now and then, so that
// fetches keep answering too.
func TestRecentRevisionCoversWritesAcknowledgedBeforeTheBound(t *testing.T) {
	_, c := startEtcd(t)
	o := newOracle(t, c, Options{})
	const maxAge = 5 * time.Millisecond
	type acked struct {
		at  time.Time
		rev int64
	}
	var mu sync.Mutex
	var writes []acked
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				var w *Write
				if i%2 == 0 {
					w = o.WriteStarting()
				}
				resp, err := c.Put(ctx, fmt.Sprintf("/cover/%d/%d", g, i), "v")
				if err != nil {
					w.Failed()
					t.Errorf("put: %v", err)
					return
				}
				w.Succeeded(resp.Header.Revision)
				mu.Lock()
				writes = append(writes, acked{at: time.Now(), rev: resp.Header.Revision})
				mu.Unlock()
				if i%5 == 0 {
					if _, err := o.Revision(ctx); err != nil {
						t.Errorf("Revision: %v", err)
						return
					}
				}
			}
		}()
	}
	checked, bounded := 0, 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			if bounded == 0 {
				t.Fatalf("no RecentRevision answered in %d tries: the property was never exercised", checked)
			}
			t.Logf("%d reads checked, %d bounded by a recent revision", checked, bounded)
			return
		default:
			runtime.Gosched() // let the writers run on a busy machine
		}
		cutoff := time.Now().Add(-maxAge)
		rev, ok := o.RecentRevision(maxAge)
		checked++
		if !ok {
			continue
		}
		bounded++
		mu.Lock()
		for _, w := range writes {
			if w.at.Before(cutoff) && w.rev > rev {
				mu.Unlock()
				t.Fatalf("RecentRevision(%v) = %d, but a write acknowledged %v before the bound is at %d", maxAge, rev, cutoff.Sub(w.at), w.rev)
			}
		}
		mu.Unlock()
	}
}
