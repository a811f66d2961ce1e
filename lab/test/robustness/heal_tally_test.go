package robustness

import (
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/test/robustness/counterload"
)

// at is a point on a test's clock, in seconds.
func at(s float64) time.Time {
	return time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second)))
}

func TestHealedFor(t *testing.T) {
	windows := []healWindow{{Cut: at(5), Heal: at(12)}, {Cut: at(20), Heal: at(27)}}
	for _, tc := range []struct {
		name  string
		t     float64
		heal  int
		late  bool
		since time.Duration
	}{
		{"before the first cut", 1, 0, true, 0},
		{"during a cut", 6, 1, false, -6 * time.Second},
		{"within the grace", 12.2, 1, false, 200 * time.Millisecond},
		{"after the grace", 12.3, 1, true, 300 * time.Millisecond},
		{"just before the next cut", 19.9, 1, true, 7900 * time.Millisecond},
		{"during the second cut", 21, 2, false, -6 * time.Second},
		{"after the last heal", 40, 2, true, 13 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heal, since, late := healedFor(windows, at(tc.t), healGrace)
			if heal != tc.heal || late != tc.late || since.Round(time.Millisecond) != tc.since {
				t.Errorf("healedFor(%v) = %d, %s, %v; want %d, %s, %v", tc.t, heal, since, late, tc.heal, tc.since, tc.late)
			}
		})
	}
	if _, _, late := healedFor(nil, at(3), healGrace); !late {
		t.Errorf("without cuts every read is in a healthy stretch")
	}
}

func TestOverlapsCut(t *testing.T) {
	windows := []healWindow{{Cut: at(5), Heal: at(12)}}
	for _, tc := range []struct {
		start, end float64
		want       bool
	}{
		{4, 4.9, false},
		{4.9, 5.1, true}, // sent just before the cut, waited into it
		{6, 7, true},
		{11.9, 13, true},
		{12, 12.1, false},
	} {
		r := counterload.Read{Start: at(tc.start), End: at(tc.end)}
		if got := overlapsCut(windows, r); got != tc.want {
			t.Errorf("overlapsCut(%v-%v) = %v, want %v", tc.start, tc.end, got, tc.want)
		}
	}
}

func TestPhase(t *testing.T) {
	windows := []healWindow{{Cut: at(5), Heal: at(12)}, {Cut: at(20), Heal: at(27)}}
	for s, want := range map[float64]string{
		1:    "before the first cut",
		5.5:  "500ms into cut 1",
		12.3: "300ms after heal 1",
		21:   "1s into cut 2",
		30:   "3s after heal 2",
	} {
		if got := phase(windows, at(s)); got != want {
			t.Errorf("phase(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestTallyHeal(t *testing.T) {
	o := &healOutcome{
		Name:    "x",
		Writes:  []counterload.Write{{Value: 0, Done: at(0)}, {Value: 1, Done: at(4)}, {Value: 2, Done: at(8)}},
		Windows: []healWindow{{Cut: at(5), Heal: at(12)}},
	}
	read := func(k counterload.Kind, start, end float64, status int, value int64, err string) counterload.Read {
		return counterload.Read{Kind: k, Start: at(start), End: at(end), Status: status, Value: value, Err: err}
	}
	o.Reads = []counterload.Read{
		read(counterload.GetConsistent, 4.5, 4.6, 200, 1, ""),                // fresh
		read(counterload.GetZero, 9, 9.1, 200, 1, ""),                        // stale: 2 was done at 8
		read(counterload.ListConsistent, 6, 13, 500, -1, "leader changed 7"), // 5xx, held up in the cut
		read(counterload.ListConsistent, 12.1, 12.2, 429, -1, "wait"),        // 429 within the grace
		read(counterload.ListZero, 13, 13.1, 429, -1, "wait"),                // late 429
		read(counterload.GetConsistent, 14, 29, 0, -1, "context deadline exceeded"),
		read(counterload.ListZero, 15, 15.1, 200, -1, counterload.ErrNoCounter.Error()), // a 2xx without the counter
		read(counterload.ListConsistent, 7, 7.1, 504, -1, "leader changed 9"),
		read(counterload.GetConsistent, 4.9, 12.5, 200, 2, ""), // waited through the cut
		read(counterload.ListZero, 4.8, 7.8, 429, -1, "wait"),  // sent before the cut: the cut's 429, not late
	}
	tl := tallyHeal(o)
	want := map[counterload.Kind]healCounts{
		counterload.GetConsistent:  {Reads: 3, Answered: 2, Other: 1},
		counterload.GetZero:        {Reads: 1, Answered: 1, Stale: 1},
		counterload.ListConsistent: {Reads: 3, TooMany: 1, Server: 2},
		counterload.ListZero:       {Reads: 3, TooMany: 2, Late429: 1, Other: 1},
	}
	for k, w := range want {
		got := tl.Kinds[k]
		got.P99, got.Max = 0, 0
		if got != w {
			t.Errorf("%s: %+v, want %+v", k, got, w)
		}
	}
	if tl.Total.Reads != len(o.Reads) || tl.Total.Server != 2 || tl.Total.Late429 != 1 {
		t.Errorf("total %+v", tl.Total)
	}
	if len(tl.Server) != 2 { // 500 and 504 stay apart; the digits do not
		t.Errorf("5xx messages %v, want 2 groups", tl.Server)
	}
	if tl.TooManyPhases != [phases]int{phaseHealthy: 1, phaseCut: 1, phaseGrace: 1} {
		t.Errorf("429 phases %v", tl.TooManyPhases)
	}
	// Write 2 completed at 8, in the cut; the first read sent after the
	// heal (at 12) that holds it is the LIST at 12.1 (no: a 429), then
	// the GET at 14 (no answer): none.
	if len(tl.CatchUp) != 1 || tl.CatchUp[0] != -1 {
		t.Errorf("catch-up %v, want [-1]", tl.CatchUp)
	}
	if tl.Total.Max != 15*time.Second {
		t.Errorf("max latency %s, want 15s", tl.Total.Max)
	}
	if tl.Disturbed != 3 {
		t.Errorf("disturbed = %d, want 3 (the 5xx in the cut and the GET that waited it out)", tl.Disturbed)
	}
	if len(tl.Late) != 1 || tl.Late[0].Heal != 1 || tl.Late[0].SinceHeal != time.Second {
		t.Errorf("late = %+v", tl.Late)
	}
	var b strings.Builder
	if err := writeHealReport(&b, healMeta{When: at(0), Commit: "c"}, []*healTally{tl}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| x | `LIST rv=\"0\"` | 3 | 0 | 0 | 2 | 1 | 0 | 1 | 3.0 s | 3.0 s |", "3 429s: 1 in flight during a cut, 1 sent within 250ms of a heal, 1 healthy.", "sent 1s after heal 1", "fault-heal x: stale=1 5xx=2 late429=1 errors=2 (upstream errors=n/a)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
}

func TestCatchUp(t *testing.T) {
	o := &healOutcome{
		Writes:  []counterload.Write{{Value: 0, Done: at(0)}, {Value: 1, Done: at(4)}, {Value: 2, Done: at(8)}, {Value: 3, Done: at(22)}},
		Windows: []healWindow{{Cut: at(5), Heal: at(12)}, {Cut: at(20), Heal: at(27)}},
	}
	ans := func(start, end float64, value int64) counterload.Read {
		return counterload.Read{Kind: counterload.GetZero, Start: at(start), End: at(end), Status: 200, Value: value}
	}
	o.Reads = []counterload.Read{
		ans(11.9, 12.2, 2), // sent before the heal: it waited, it did not catch up
		ans(12.05, 12.1, 1),
		ans(12.5, 12.6, 2), // heal 1's catch-up: 600ms
		ans(13, 13.1, 2),
		{Kind: counterload.ListZero, Start: at(12.3), End: at(12.4), Status: 429, Value: -1, Err: "wait"},
		ans(28, 28.1, 2), // heal 2 needs 3, which never came back
	}
	got := catchUp(o)
	want := []time.Duration{600 * time.Millisecond, -1}
	if len(got) != len(want) || got[0].Round(time.Millisecond) != want[0] || got[1] != want[1] {
		t.Errorf("catchUp = %v, want %v", got, want)
	}
}

// Under a staleness bound an rv=0 read is stale only when it misses a
// write acknowledged that long before it started; rv="" reads keep the
// strict check.
func TestTallyHealZeroStaleness(t *testing.T) {
	o := &healOutcome{
		Name:          "bounded",
		ZeroStaleness: 2 * time.Second,
		Writes:        []counterload.Write{{Value: 0, Done: at(0)}, {Value: 1, Done: at(4)}, {Value: 2, Done: at(8)}},
	}
	read := func(k counterload.Kind, start float64, value int64) counterload.Read {
		return counterload.Read{Kind: k, Start: at(start), End: at(start + 0.1), Status: 200, Value: value}
	}
	o.Reads = []counterload.Read{
		read(counterload.GetZero, 9, 1),        // 2 was done 1s before: within the bound
		read(counterload.ListZero, 11, 1),      // 2 was done 3s before: stale
		read(counterload.GetConsistent, 9, 1),  // strict: stale
		read(counterload.ListConsistent, 9, 2), // fresh
	}
	tl := tallyHeal(o)
	for k, want := range map[counterload.Kind]int{counterload.GetZero: 0, counterload.ListZero: 1, counterload.GetConsistent: 1, counterload.ListConsistent: 0} {
		if got := tl.Kinds[k].Stale; got != want {
			t.Errorf("%s: %d stale, want %d", k, got, want)
		}
	}
}
