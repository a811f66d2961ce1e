package history

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshcache/watchcache/internal/store"
)

// build applies puts at the given revisions (one key per revision) and
// returns the history and the snapshots after each.
func build(t *testing.T, opts Options, rvs []uint64, ages []time.Duration) *History {
	t.Helper()
	now := time.Unix(1000, 0)
	opts.Now = func() time.Time { return now }
	h := New(opts)
	w := store.NewWriter(nil)
	w.Advance(1)
	h.Reset(w.Snapshot())
	for i, rv := range rvs {
		o := &store.Object{Key: "/k", RV: rv}
		if _, err := w.Put(o); err != nil {
			t.Fatal(err)
		}
		at := now
		if ages != nil {
			at = now.Add(-ages[i])
		}
		if err := h.Append(Event{Type: watch.Modified, Object: o, RV: rv, Snapshot: w.Snapshot(), At: at}); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestSince(t *testing.T) {
	h := build(t, Options{}, []uint64{3, 5, 9}, nil)
	cases := []struct {
		from    uint64
		want    []uint64
		wantErr error
	}{
		{from: 0, wantErr: ErrExpired},
		{from: 1, want: []uint64{3, 5, 9}},
		{from: 3, want: []uint64{5, 9}},
		{from: 4, want: []uint64{5, 9}},
		{from: 9, want: nil},
		{from: 100, want: nil},
	}
	for _, tc := range cases {
		evs, err := h.Since(tc.from)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("Since(%d) err = %v, want %v", tc.from, err, tc.wantErr)
			continue
		}
		var got []uint64
		for _, e := range evs {
			got = append(got, e.RV)
		}
		if len(got) != len(tc.want) {
			t.Errorf("Since(%d) = %v, want %v", tc.from, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Since(%d) = %v, want %v", tc.from, got, tc.want)
			}
		}
	}
}

func TestSnapshotAt(t *testing.T) {
	h := build(t, Options{}, []uint64{3, 5, 9}, nil)
	cases := []struct {
		rv, upTo uint64
		wantLen  int
		wantErr  error
	}{
		{rv: 0, upTo: 9, wantErr: ErrExpired},
		{rv: 1, upTo: 9, wantLen: 0},
		{rv: 2, upTo: 9, wantLen: 0},
		{rv: 3, upTo: 9, wantLen: 1},
		{rv: 9, upTo: 9, wantLen: 1},
		{rv: 12, upTo: 12, wantLen: 1},
		{rv: 13, upTo: 12, wantErr: ErrFuture},
	}
	for _, tc := range cases {
		s, err := h.SnapshotAt(tc.rv, tc.upTo)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("SnapshotAt(%d) err = %v, want %v", tc.rv, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if s.RV() != tc.rv || s.Len() != tc.wantLen {
			t.Errorf("SnapshotAt(%d) = rv %d len %d, want rv %d len %d", tc.rv, s.RV(), s.Len(), tc.rv, tc.wantLen)
		}
	}
}

func TestEviction(t *testing.T) {
	cases := []struct {
		name     string
		opts     Options
		ages     []time.Duration
		wantBase uint64
		wantLen  int
	}{
		{name: "capacity", opts: Options{Capacity: 2}, wantBase: 3, wantLen: 2},
		{name: "age", opts: Options{Window: time.Minute}, ages: []time.Duration{2 * time.Minute, 90 * time.Second, 30 * time.Second, 0}, wantBase: 3, wantLen: 2},
		{name: "both within bounds", opts: Options{Capacity: 10, Window: time.Hour}, wantBase: 1, wantLen: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := build(t, tc.opts, []uint64{2, 3, 4, 5}, tc.ages)
			if h.Base() != tc.wantBase || h.Len() != tc.wantLen {
				t.Fatalf("base %d len %d, want base %d len %d", h.Base(), h.Len(), tc.wantBase, tc.wantLen)
			}
			if err := h.CheckMonotonic(); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Since(tc.wantBase - 1); !errors.Is(err, ErrExpired) {
				t.Fatalf("Since below base: err = %v, want ErrExpired", err)
			}
		})
	}
}

func TestAppendRejectsOutOfOrder(t *testing.T) {
	h := build(t, Options{}, []uint64{3}, nil)
	if err := h.Append(Event{RV: 2}); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("err = %v, want ErrOutOfOrder", err)
	}
	// A batch that goes back in its middle is refused whole.
	if err := h.Append(Event{RV: 4}, Event{RV: 3}); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("err = %v, want ErrOutOfOrder", err)
	}
	if h.Len() != 1 {
		t.Fatalf("%d events after refused appends, want 1", h.Len())
	}
}

// TestEventsOfOneRevision: one etcd transaction changes several keys at one
// revision. All its events are kept, served together from Since, and every
// snapshot at that revision holds the whole transaction, even once the
// window evicts part of the group.
func TestEventsOfOneRevision(t *testing.T) {
	now := time.Unix(1000, 0)
	h := New(Options{Capacity: 4, Now: func() time.Time { return now }})
	w := store.NewWriter(nil)
	w.Advance(1)
	h.Reset(w.Snapshot())
	appendTxn := func(rv uint64, keys ...string) {
		t.Helper()
		var evs []Event
		for _, k := range keys {
			o := &store.Object{Key: k, RV: rv}
			if _, err := w.Put(o); err != nil {
				t.Fatal(err)
			}
			evs = append(evs, Event{Type: watch.Added, Object: o, RV: rv})
		}
		snap := w.Snapshot()
		for i := range evs {
			evs[i].Snapshot = snap
		}
		if err := h.Append(evs...); err != nil {
			t.Fatal(err)
		}
	}
	appendTxn(2, "/a", "/b", "/c")
	if err := h.CheckMonotonic(); err != nil {
		t.Fatal(err)
	}
	evs, err := h.Since(1)
	if err != nil || len(evs) != 3 {
		t.Fatalf("Since(1) = %d events, %v; want the 3 of revision 2", len(evs), err)
	}
	if evs, _ := h.Since(2); len(evs) != 0 {
		t.Fatalf("Since(2) = %d events, want none", len(evs))
	}
	snap, err := h.SnapshotAt(2, 2)
	if err != nil || snap.Len() != 3 {
		t.Fatalf("SnapshotAt(2) holds %d objects (%v), want the whole transaction", snap.Len(), err)
	}
	// Capacity 4: a second transaction of three evicts two events of the
	// first. The base becomes revision 2's whole state, never a part.
	appendTxn(3, "/d", "/e", "/f")
	if base := h.Base(); base != 2 {
		t.Fatalf("base %d, want 2", base)
	}
	if snap, err := h.SnapshotAt(2, 3); err != nil || snap.Len() != 3 {
		t.Fatalf("SnapshotAt(2) after eviction holds %d objects (%v), want 3", snap.Len(), err)
	}
	if _, err := h.Since(1); !errors.Is(err, ErrExpired) {
		t.Fatalf("Since(1) after eviction: %v, want ErrExpired", err)
	}
	if err := h.CheckMonotonic(); err != nil {
		t.Fatal(err)
	}
}
