package kindupgrade

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/test/robustness/counterload"
)

// at is a point on a test's clock, in seconds.
func at(s float64) time.Time {
	return time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second)))
}

func read(cp int, kind counterload.Kind, start, end float64, status int, value int64) Read {
	return Read{CP: cp, Read: counterload.Read{Kind: kind, Start: at(start), End: at(end), Status: status, Value: value}}
}

func TestTally(t *testing.T) {
	steps := Plan(3)
	rec := &Recording{
		ControlPlanes: 3, ZeroStaleness: 100 * time.Millisecond, Began: at(0), Over: at(40),
		// apiserver 1 restarted on upstream (10-12), then moved to
		// freshcache (20-22); nothing else.
		Changes: []Change{
			{Step: steps[0], Edit: at(10), Ready: at(12)},
			{Step: steps[3], Edit: at(20), Ready: at(22)},
		},
		Writes:      []counterload.Write{{Value: 0, Done: at(0)}, {Value: 1, Done: at(5)}, {Value: 2, Done: at(25)}, {Value: 3, Done: at(30)}},
		WriteErrors: []counterload.WriteError{{At: at(11), Err: "x"}, {At: at(21), Err: "y"}, {At: at(21.5), Err: "z"}},
		Informers:   2,
		Opens: []Open{
			{Informer: 0, At: at(0), List: true}, {Informer: 0, At: at(0.1)}, // LIST+WATCH start
			{Informer: 1, At: at(0)},                               // a watch-list start
			{Informer: 0, At: at(11)}, {Informer: 1, At: at(11.5)}, // both restart their watch in step 1
			{Informer: 1, At: at(21), List: true}, // a relist in step 2
		},
	}
	rec.Reads = []Read{
		// baseline
		read(0, counterload.ListConsistent, 6, 6.1, 200, 1), // fresh
		read(0, counterload.ListConsistent, 6, 6.1, 200, 0), // stale, promised
		read(1, counterload.GetZero, 6, 6.1, 200, 0),        // older rv=0 on upstream: not promised
		read(2, counterload.GetConsistent, 7, 7.1, 0, -1),   // no answer
		// step 1 (restart of apiserver 1)
		read(0, counterload.GetConsistent, 11, 11.1, 503, -1),
		read(0, counterload.GetConsistent, 11.2, 11.3, 503, -1),
		read(0, counterload.ListZero, 11.5, 11.6, 200, 0), // older, apiserver 1 was on upstream
		// step 2 (apiserver 1 to freshcache)
		read(0, counterload.ListZero, 21.9, 22.5, 200, 0), // in flight during the replacement: not promised
		read(0, counterload.GetZero, 30.05, 30.1, 200, 2), // the write of 3 was 50 ms before: within the bound
		read(0, counterload.GetZero, 30.2, 30.3, 200, 2),  // 200 ms after: stale, promised by freshcache
		read(1, counterload.GetZero, 30.2, 30.3, 200, 2),  // apiserver 2 still upstream: not promised
		read(0, counterload.ListConsistent, 31, 31.1, 429, -1),
	}
	wins := Tally(rec)
	if len(wins) != 3 {
		t.Fatalf("%d windows, want 3 (baseline and two steps)", len(wins))
	}
	type row struct {
		reads, stale, older, writeErrs, relists, restarts int
		failed                                            map[int]int
		caches                                            string
		down                                              time.Duration
	}
	var got []row
	for _, w := range wins {
		c := w.Counts
		got = append(got, row{c.Reads, c.Stale, c.OlderZero, c.WriteErrors, c.Relists, c.WatchRestarts, c.Failed, strings.Join(w.Caches, ","), w.Downtime})
	}
	want := []row{
		{4, 1, 1, 0, 0, 0, map[int]int{0: 1}, "upstream,upstream,upstream", 0},
		{3, 0, 1, 1, 0, 2, map[int]int{503: 2}, "upstream,upstream,upstream", 2 * time.Second},
		{5, 1, 2, 2, 1, 0, map[int]int{429: 1}, "freshcache,upstream,upstream", 2 * time.Second},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("windows\n%+v\nwant\n%+v", got, want)
	}
	if line := ClosingLine(wins); line != "kind-upgrade: stale=2 failed-reads=2/1/0 write-errors=1/2/0 relists=0/1/0 watch-restarts=2/0/0 (restart/upgrade/rollback)" {
		t.Errorf("closing line %q", line)
	}
	var b strings.Builder
	if err := WriteReport(&b, Meta{Command: "make test-kind-upgrade", Dwell: 30 * time.Second}, rec, wins, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| upgrade | 5 | 429×1 | 1 | 2 | 2 | 1 | 0 |", "| apiserver 1 moved to freshcache | f u u | 2s |", "no answer×1"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
}
