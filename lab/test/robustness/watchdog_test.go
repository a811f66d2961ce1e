package robustness

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

func TestWatchdogInFlight(t *testing.T) {
	w := newWatchdog(nil, 0)
	endA := w.begin("a", time.Minute)
	endB := w.begin("b", time.Second)
	w.begin("c", time.Hour) // never ended
	base := time.Now()

	for _, tc := range []struct {
		name        string
		at          time.Duration
		end         []func()
		wantAll     []string
		wantOverdue []string
	}{
		{name: "all within their limits", at: 0, wantAll: []string{"a", "b", "c"}},
		{name: "b past its second", at: 2 * time.Second, wantAll: []string{"a", "b", "c"}, wantOverdue: []string{"b"}},
		{name: "a and b past theirs", at: 2 * time.Minute, wantAll: []string{"a", "b", "c"}, wantOverdue: []string{"a", "b"}},
		{name: "ended steps are gone", at: 2 * time.Minute, end: []func(){endA, endB, endB}, wantAll: []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, end := range tc.end {
				end()
			}
			all, overdue := w.inFlight(base.Add(tc.at))
			if got := names(all); !slices.Equal(got, tc.wantAll) {
				t.Errorf("in flight %v, want %v", got, tc.wantAll)
			}
			if got := names(overdue); !slices.Equal(got, tc.wantOverdue) {
				t.Errorf("overdue %v, want %v", got, tc.wantOverdue)
			}
		})
	}
}

func TestNilWatchdogTracksNothing(t *testing.T) {
	var w *watchdog
	w.begin("anything", 0)() // must not panic
}

// TestWatchdogReportsAStall: a step that never ends is reported once, with
// its name, the other steps in flight and the goroutine stacks; a step
// that ended in time is not.
func TestWatchdogReportsAStall(t *testing.T) {
	reports := make(chan string, 2)
	w := newWatchdog(func(r string) { reports <- r }, 0)
	w.begin("fast step", time.Hour)()
	w.begin("long but healthy step", time.Hour)
	w.begin("stuck step", time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { w.run(ctx, 5*time.Millisecond); close(done) }()

	var report string
	select {
	case report = <-reports:
	case <-time.After(time.Minute): // liveness bound, not a speed check
		t.Fatal("no stall reported for a step past its limit")
	}
	for _, want := range []string{"STUCK stuck step", "long but healthy step", "goroutine ", "TestWatchdogReportsAStall"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%.2000s", want, report)
		}
	}
	if strings.Contains(report, "fast step") || strings.Contains(report, "STUCK long") {
		t.Errorf("report names a step that ended or is within its limit:\n%.2000s", report)
	}
	<-done // run returns after its one report
	if len(reports) != 0 {
		t.Errorf("%d more reports, want one per run", len(reports))
	}
}

func names(steps []step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.what)
	}
	return out
}

// hungAPI is an apiserver that hangs: Do ignores its context, and a watch's
// channel is never closed, until release is closed.
type hungAPI struct{ release chan struct{} }

func (h *hungAPI) Index() int  { return 0 }
func (h *hungAPI) Member() int { return 0 }
func (h *hungAPI) Do(context.Context, *record.Op) error {
	<-h.release
	return errors.New("released")
}
func (h *hungAPI) Watch(context.Context, string, int64) (watch.Interface, error) {
	fw := watch.NewFake()
	go func() { <-h.release; fw.Stop() }()
	return fw, nil
}
func (h *hungAPI) WaitReady(context.Context) error { return nil }
func (h *hungAPI) Restart(context.Context) error   { return nil }
func (h *hungAPI) Stop()                           {}

// TestHungStepsAreReported: the harness's client ops and watch sessions
// are watched, so an apiserver that ignores its contexts is reported by
// name instead of hanging the run.
func TestHungStepsAreReported(t *testing.T) {
	tr := Traffic{Keys: 2, Nodes: 1, OpTimeout: 10 * time.Millisecond}
	for _, tc := range []struct {
		name  string
		start func(ctx context.Context, api API, wd *watchdog)
		want  string
	}{
		{
			name: "client op",
			start: func(ctx context.Context, api API, wd *watchdog) {
				c := newClient(7, 1, []API{api}, NewRecorder(), wd, tr)
				op := record.Op{Client: 7, Kind: record.Get, Mode: record.Consistent, Name: "a"}
				c.do(ctx, &op)
			},
			want: `STUCK client 7: get (read mode "consistent") on cache 0`,
		},
		{
			name: "watch session",
			start: func(ctx context.Context, api API, wd *watchdog) {
				w := &watcher{actor: actor{id: 9, rng: rand.New(rand.NewPCG(1, 2)), caches: []API{api}, rec: NewRecorder(), wd: wd, tr: tr}}
				w.session(ctx, 0, 5, false)
			},
			want: "STUCK watcher 9: watch session on cache 0 from rv 5",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &hungAPI{release: make(chan struct{})}
			reports := make(chan string, 1)
			wd := newWatchdog(func(r string) { reports <- r }, 10*time.Millisecond)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go wd.run(ctx, 5*time.Millisecond)
			stepDone := make(chan struct{})
			go func() { tc.start(ctx, api, wd); close(stepDone) }()
			select {
			case r := <-reports:
				if !strings.Contains(r, tc.want) {
					t.Errorf("report lacks %q:\n%.1500s", tc.want, r)
				}
			case <-time.After(time.Minute): // liveness bound, not a speed check
				t.Fatal("the hung step was not reported")
			}
			close(api.release)
			<-stepDone
		})
	}
}
