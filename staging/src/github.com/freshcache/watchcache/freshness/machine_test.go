package freshness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Scripts drive a Machine line by line. Commands:
//
//	rev N              EventApplied(N)
//	progress N         ProgressNotified(N)
//	psent / panswer    ProgressRequestSent / ProgressAnswered
//	read ID            a Consistent read arrives        [deadline=MS]
//	read ID min=N      a NotOlderThan read arrives      [deadline=MS]
//	read ID catchup=MS a patient Consistent read arrives
//	issue              FetchIssued
//	answer R           FetchAnswered(R, epoch)          [at=MS]
//	fail               FetchFailed
//	unanswered         FetchUnanswered
//	tick MS            Tick(epoch+MS)
//	cancel ID          ReadCancelled, must return true  (cancel! ID: false)
//	output WANT...     Output() must equal WANT, written as: "-" for nothing,
//	                   "fetch", "progress", "rel:ID@TARGET/RV",
//	                   "fail:ID", "timeout:ID:STAGE", sorted as printed
//	status K=V...      Status fields: c, fetch, pending, covered, waiting
//
// A command may end with "!! text": it must fail with an error containing
// text. Lines starting with # are comments.
func runScript(t *testing.T, script string) {
	t.Helper()
	m, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		wantErr := ""
		if i := strings.Index(line, "!!"); i >= 0 {
			wantErr = strings.TrimSpace(line[i+2:])
			line = strings.TrimSpace(line[:i])
		}
		f := strings.Fields(line)
		arg := func(i int) int64 {
			t.Helper()
			_, num, _ := strings.Cut(f[i], "=") // "min=N", "deadline=MS", ... or a bare number
			if !strings.Contains(f[i], "=") {
				num = f[i]
			}
			v, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				t.Fatalf("line %d %q: %v", n+1, line, err)
			}
			return v
		}
		var err error
		switch f[0] {
		case "rev":
			m.EventApplied(arg(1))
		case "progress":
			m.ProgressNotified(arg(1))
		case "psent":
			err = m.ProgressRequestSent(epoch)
		case "panswer":
			m.ProgressAnswered()
		case "read":
			r := Read{ID: ReadID(arg(1)), Kind: Consistent}
			for i := 2; i < len(f); i++ {
				switch {
				case strings.HasPrefix(f[i], "min="):
					r.Kind, r.MinRV = NotOlderThan, arg(i)
				case strings.HasPrefix(f[i], "deadline="):
					r.Deadline = epoch.Add(time.Duration(arg(i)) * time.Millisecond)
				case strings.HasPrefix(f[i], "catchup="):
					r.CatchUp = time.Duration(arg(i)) * time.Millisecond
				case f[i] == "kind=0":
					r.Kind = 0
				default:
					t.Fatalf("line %d: bad read option %q", n+1, f[i])
				}
			}
			err = m.ReadArrived(r)
		case "issue":
			_, err = m.FetchIssued()
		case "answer":
			at := epoch
			if len(f) > 2 {
				at = epoch.Add(time.Duration(arg(2)) * time.Millisecond)
			}
			err = m.FetchAnswered(arg(1), at)
		case "fail":
			err = m.FetchFailed(errors.New("etcdserver: permission denied"))
		case "unanswered":
			err = m.FetchUnanswered(context.DeadlineExceeded)
		case "tick":
			m.Tick(epoch.Add(time.Duration(arg(1)) * time.Millisecond))
		case "cancel", "cancel!":
			if got, want := m.ReadCancelled(ReadID(arg(1))), f[0] == "cancel"; got != want {
				t.Fatalf("line %d %q: ReadCancelled=%v", n+1, line, got)
			}
		case "output":
			if got, want := formatOutput(m.Output()), strings.Join(f[1:], " "); got != want {
				t.Fatalf("line %d %q:\n got output %s\nwant output %s", n+1, line, got, want)
			}
		case "status":
			st := m.Status()
			got := map[string]int64{"c": st.Revision, "fetch": int64(st.Fetch), "pending": int64(st.Pending),
				"covered": int64(st.Covered), "waiting": int64(st.Waiting)}
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				want, _ := strconv.ParseInt(v, 10, 64)
				if g, ok := got[k]; !ok || g != want {
					t.Fatalf("line %d %q: status %+v", n+1, line, st)
				}
			}
		default:
			t.Fatalf("line %d: unknown command %q", n+1, f[0])
		}
		switch {
		case wantErr == "" && err != nil:
			t.Fatalf("line %d %q: unexpected error %v", n+1, line, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Fatalf("line %d %q: error %v, want %q", n+1, line, err, wantErr)
		}
		if err := m.verify(); err != nil {
			t.Fatalf("line %d %q: invariants: %v", n+1, line, err)
		}
	}
}

func formatOutput(rd Output) string {
	var out []string
	if rd.IssueFetch {
		out = append(out, "fetch")
	}
	if rd.SendProgress {
		out = append(out, "progress")
	}
	slices.SortFunc(rd.Released, func(a, b Release) int { return int(a.ID) - int(b.ID) })
	for _, r := range rd.Released {
		out = append(out, fmt.Sprintf("rel:%d@%d/%d", r.ID, r.Target, r.RV))
	}
	slices.SortFunc(rd.Failed, func(a, b Failure) int { return int(a.ID) - int(b.ID) })
	for _, f := range rd.Failed {
		out = append(out, fmt.Sprintf("fail:%d", f.ID))
	}
	slices.SortFunc(rd.TimedOut, func(a, b Timeout) int { return int(a.ID) - int(b.ID) })
	for _, to := range rd.TimedOut {
		out = append(out, fmt.Sprintf("timeout:%d:%v", to.ID, to.Stage))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, " ")
}

func TestScenarios(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"fast path: c >= R releases at once", `
			rev 10
			read 1
			output fetch
			issue
			output -
			answer 8
			output rel:1@8/10
			status c=10 pending=0 covered=0 waiting=0
		`},
		{"slow path: progress request at once, no tick", `
			rev 5
			read 1
			issue
			answer 8
			# the waiter appears; the progress request is asked for in the same Output
			output progress
			psent
			output -
			rev 7
			output -
			progress 8
			output rel:1@8/8
			panswer
			output -
		`},
		{"a read arriving while a fetch is in flight waits for the next fetch", `
			read 1
			issue
			read 2
			# no second fetch while one is in flight
			output -
			status pending=1 covered=1
			rev 10
			answer 10
			output fetch rel:1@10/10
			issue
			answer 12
			output progress
			rev 12
			output rel:2@12/12
		`},
		{"all reads waiting when a fetch is issued share its answer", `
			read 1
			read 2
			read 3
			output fetch
			issue
			status covered=3 fetch=1
			rev 4
			answer 4
			output rel:1@4/4 rel:2@4/4 rel:3@4/4
			status fetch=1
		`},
		{"a failed fetch fails only the reads it covered", `
			read 1
			issue
			read 2
			fail
			output fetch fail:1
			issue
			answer 3
			output progress
			rev 3
			output rel:2@3/3
		`},
		{"progress requests repeat while waiters remain", `
			read 1 min=10
			output progress
			psent
			progress 5
			panswer
			output progress
			psent
			output -
			progress 10
			output rel:1@10/10
			panswer
			output -
		`},
		{"no progress request while reads only wait for a fetch", `
			read 1
			output fetch
			issue
			output -
		`},
		{"NotOlderThan: satisfied at arrival, min=0, waits", `
			rev 7
			read 1 min=7
			read 2 min=0
			read 3 min=9
			output progress rel:1@7/7 rel:2@0/7
			rev 9
			output rel:3@9/9
		`},
		{"the cache revision never goes backward", `
			rev 10
			rev 5
			progress 3
			status c=10
			read 1 min=7
			output rel:1@7/10
		`},
		{"deadlines in every stage", `
			read 1 deadline=10
			issue
			read 2 deadline=20
			read 3 min=5 deadline=30
			read 4
			output progress
			psent
			tick 9
			output -
			tick 10
			output timeout:1:fetch
			answer 2
			output fetch
			tick 20
			output fetch timeout:2:fetch
			tick 30
			output fetch timeout:3:cache
			issue
			answer 3
			output -
			rev 3
			output rel:4@3/3
		`},
		{"a read that timed out while covered is not released by the answer", `
			read 1 deadline=5
			issue
			tick 5
			output timeout:1:fetch
			rev 9
			answer 9
			output -
		`},
		{"cancellation in every stage", `
			read 1
			cancel 1
			output -
			cancel! 1
			read 2
			issue
			cancel 2
			answer 5
			output -
			read 3 min=4
			status waiting=1
			cancel 3
			status waiting=0
			rev 9
			output -
			# an ID may be reused once resolved
			read 3 min=2
			output rel:3@2/9
		`},
		{"protocol misuse is refused and changes nothing", `
			answer 1 !! no revision fetch in flight
			fail !! no revision fetch in flight
			issue
			issue !! already in flight
			psent
			psent !! progress request is already in flight
			read 1
			read 1 !! read ID already in use
			read 2 min=-1 !! negative MinRV
			read 3 kind=0 !! unknown kind
			panswer
			panswer
			status fetch=1 pending=1 covered=0
		`},
		{"a patient read outwaits unanswered fetches, then has CatchUp from the answer", `
			read 1 catchup=100
			read 2 deadline=50
			output fetch
			issue
			status covered=2
			unanswered
			# the other read fails; the patient one waits for the next fetch
			output fetch fail:2
			status pending=1 covered=0
			issue
			# no deadline while it waits for its revision
			tick 1000
			output -
			unanswered
			output fetch
			issue
			answer 7 at=2000
			output progress
			tick 2099
			output progress
			tick 2100
			output timeout:1:cache
		`},
		{"a patient read keeps its place and shares the next fetch", `
			read 1 catchup=100
			issue
			read 2
			unanswered
			output fetch
			status pending=2 covered=0
			issue
			status covered=2
			rev 5
			answer 5 at=10
			output rel:1@5/5 rel:2@5/5
		`},
		{"a patient read: released once c reaches R, or at once", `
			rev 10
			read 1 catchup=100
			issue
			answer 8 at=5
			output rel:1@8/10
			read 2 catchup=100
			issue
			answer 12 at=5
			output progress
			rev 12
			output rel:2@12/12
		`},
		{"a failed fetch fails patient reads too; cancelled ones are forgotten", `
			read 1 catchup=100
			issue
			fail
			output fail:1
			read 2 catchup=100
			issue
			cancel 2
			unanswered
			output -
			status pending=0 covered=0 waiting=0
		`},
		{"patient reads: misuse is refused", `
			unanswered !! no revision fetch in flight
			read 1 catchup=10 deadline=5 !! both a Deadline and a CatchUp
			read 2 min=3 catchup=10 !! CatchUp for NotOlderThan
			read 3 catchup=-1 !! negative CatchUp
			status pending=0
		`},
		{"a prefetch covers whatever is pending, possibly nothing", `
			issue
			read 1
			answer 1
			output fetch
		`},
	} {
		t.Run(tc.name, func(t *testing.T) { runScript(t, tc.script) })
	}
}

func TestFailureError(t *testing.T) {
	m, _ := New(Options{})
	cause := errors.New("connection refused")
	_ = m.ReadArrived(Read{ID: 1, Kind: Consistent})
	_, _ = m.FetchIssued()
	if err := m.FetchFailed(cause); err != nil {
		t.Fatal(err)
	}
	rd := m.Output()
	if len(rd.Failed) != 1 {
		t.Fatalf("ready %+v", rd)
	}
	f := rd.Failed[0]
	if !errors.Is(f.Err, ErrFetchFailed) || !errors.Is(f.Err, cause) || f.Fetch != 1 {
		t.Fatalf("failure %+v: want ErrFetchFailed wrapping the cause", f)
	}
	if !strings.HasPrefix(f.Err.Error(), "freshness: ") {
		t.Fatalf("error %q lacks the package prefix", f.Err)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		opts    Options
		wantErr bool
		wantRev int64
	}{
		{Options{}, false, 0},
		{Options{Revision: 42}, false, 42},
		{Options{Revision: -1}, true, 0},
	} {
		m, err := New(tc.opts)
		if (err != nil) != tc.wantErr {
			t.Fatalf("New(%+v): err=%v", tc.opts, err)
		}
		if err == nil && m.Status().Revision != tc.wantRev {
			t.Fatalf("New(%+v): c=%d", tc.opts, m.Status().Revision)
		}
	}
}

func TestNextDeadline(t *testing.T) {
	m, _ := New(Options{})
	if _, ok := m.NextDeadline(); ok {
		t.Fatal("deadline with no reads")
	}
	at := func(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }
	for i, ms := range []int{30, 10, 20} {
		_ = m.ReadArrived(Read{ID: ReadID(i + 1), Kind: Consistent, Deadline: at(ms)})
	}
	_ = m.ReadArrived(Read{ID: 9, Kind: Consistent}) // no deadline
	for _, tc := range []struct {
		cancel ReadID
		want   time.Time
		ok     bool
	}{
		{0, at(10), true},
		{2, at(20), true},
		{3, at(30), true},
		{1, time.Time{}, false},
	} {
		if tc.cancel != 0 {
			m.ReadCancelled(tc.cancel)
		}
		got, ok := m.NextDeadline()
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Fatalf("after cancelling %d: NextDeadline=%v,%v want %v,%v", tc.cancel, got, ok, tc.want, tc.ok)
		}
	}
}

// BenchmarkRound measures one coalesced round: n reads, one fetch, one event.
func BenchmarkRound(b *testing.B) {
	for _, n := range []int{1, 32, 1024} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			m, _ := New(Options{})
			id := ReadID(0)
			rev := int64(0)
			for b.Loop() {
				for range n {
					id++
					_ = m.ReadArrived(Read{ID: id, Kind: Consistent, Deadline: epoch})
				}
				_, _ = m.FetchIssued()
				rev++
				_ = m.FetchAnswered(rev, epoch)
				_ = m.ProgressRequestSent(epoch)
				m.ProgressNotified(rev)
				m.ProgressAnswered()
				if rd := m.Output(); len(rd.Released) != n {
					b.Fatalf("released %d of %d", len(rd.Released), n)
				}
			}
		})
	}
}
