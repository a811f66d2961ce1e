package plan

import (
	"fmt"
	"testing"
)

func TestWaitAfter(t *testing.T) {
	var (
		listFresh   = Wait{Verb: List, Consistent: true}
		getFresh    = Wait{Verb: Get, Consistent: true}
		watchFresh  = Wait{Verb: Watch, Consistent: true}
		listZero    = Wait{Verb: List, Consistent: true, Zero: true}
		getZero     = Wait{Verb: Get, Consistent: true, Zero: true}
		listBounded = Wait{Verb: List, Bounded: true, Zero: true}
		getBounded  = Wait{Verb: Get, Bounded: true, Zero: true}
		watchBound  = Wait{Verb: Watch, Bounded: true, Zero: true}
		listN       = Wait{Verb: List}
		watchN      = Wait{Verb: Watch}
	)
	reject := func(w Wait) Wait { w.Reject = true; return w }
	cases := []struct {
		name    string
		w       Wait
		e       Ending
		want    Outcome
		patient bool
	}{
		{"LIST rv= released", listFresh, Released, ServeCache, false},
		{"LIST rv= fetch failed: fallback", listFresh, FetchFailed, ServeEtcd, false},
		{"LIST rv= timed out: fallback", listFresh, TimedOut, ServeEtcd, false},
		{"LIST rv= fetch failed, reject", reject(listFresh), FetchFailed, TooManyRequests, false},
		{"LIST rv= timed out, reject", reject(listFresh), TimedOut, TooManyRequests, false},
		{"GET rv= timed out: fallback", getFresh, TimedOut, ServeEtcd, false},
		{"GET rv= timed out, reject", reject(getFresh), TimedOut, TooManyRequests, false},
		{"WATCH rv= released", watchFresh, Released, ServeCache, true},
		{"WATCH rv= fetch failed: its error", watchFresh, FetchFailed, FailWithFetchError, true},
		{"WATCH rv= timed out: too large at the target", watchFresh, TimedOut, TooLargeForTarget, true},
		{"WATCH rv= fetch failed, reject", reject(watchFresh), FetchFailed, TooManyRequests, false},
		{"WATCH rv= timed out, reject", reject(watchFresh), TimedOut, TooManyRequests, false},
		{"LIST rv=0 fetch failed: 429, never etcd", listZero, FetchFailed, TooManyRequests, false},
		{"LIST rv=0 timed out: 429, never etcd", listZero, TimedOut, TooManyRequests, false},
		{"GET rv=0 timed out: fallback", getZero, TimedOut, ServeEtcd, false},
		{"GET rv=0 fetch failed: fallback", getZero, FetchFailed, ServeEtcd, false},
		{"LIST rv=0 bounded released", listBounded, Released, ServeCache, false},
		{"LIST rv=0 bounded timed out: 429", listBounded, TimedOut, TooManyRequests, false},
		{"GET rv=0 bounded timed out: fallback", getBounded, TimedOut, ServeEtcd, false},
		{"GET rv=0 bounded timed out, reject", reject(getBounded), TimedOut, TooManyRequests, false},
		{"WATCH rv=0 bounded timed out: too large at the target", watchBound, TimedOut, TooLargeForTarget, false},
		{"LIST rv=0 catching up: wait again", listZero, TimedOutCatchingUp, WaitAgain, false},
		{"LIST rv=0 bounded catching up: wait again", listBounded, TimedOutCatchingUp, WaitAgain, false},
		{"LIST rv=0 bounded catching up, reject: 429", reject(listBounded), TimedOutCatchingUp, TooManyRequests, false},
		{"LIST rv= catching up: fallback, as a timeout", listFresh, TimedOutCatchingUp, ServeEtcd, false},
		{"GET rv=0 bounded catching up: fallback, as a timeout", getBounded, TimedOutCatchingUp, ServeEtcd, false},
		{"WATCH rv=0 bounded catching up: too large, as a timeout", watchBound, TimedOutCatchingUp, TooLargeForTarget, false},
		{"WATCH rv= catching up: too large, as a timeout", watchFresh, TimedOutCatchingUp, TooLargeForTarget, true},
		{"LIST rv=N catching up: too large, as a timeout", listN, TimedOutCatchingUp, TooLargeForRead, false},
		{"LIST rv=N released", listN, Released, ServeCache, false},
		{"LIST rv=N timed out: too large", listN, TimedOut, TooLargeForRead, false},
		{"LIST rv=N timed out, reject: still too large", reject(listN), TimedOut, TooLargeForRead, false},
		{"WATCH rv=N timed out: too large", watchN, TimedOut, TooLargeForRead, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.After(tc.e); got != tc.want {
				t.Fatalf("After(%d) = %v, want %v", tc.e, got, tc.want)
			}
			if got := tc.w.Patient(); got != tc.patient {
				t.Fatalf("Patient() = %v, want %v", got, tc.patient)
			}
		})
	}
}

// Over every wait and ending: a released read is served from the cache,
// nothing else is; a WATCH and an rv=0 LIST never go to etcd; a read
// that is neither consistent nor bounded is never sent to etcd nor given
// 429; only an rv=0 LIST whose cache was catching up waits again, unless
// waits are bounded (TimeoutReject); catching up otherwise ends as a
// timeout does.
func TestWaitAfterInvariants(t *testing.T) {
	for _, verb := range []Verb{List, Get, Watch} {
		for bits := range 16 {
			w := Wait{Verb: verb, Consistent: bits&1 != 0, Bounded: bits&2 != 0, Zero: bits&4 != 0, Reject: bits&8 != 0}
			if w.Consistent && w.Bounded {
				continue // a bounded read waits as NotOlderThan
			}
			for _, e := range []Ending{Released, FetchFailed, TimedOut, TimedOutCatchingUp} {
				t.Run(fmt.Sprintf("%+v/%d", w, e), func(t *testing.T) {
					got := w.After(e)
					if (got == ServeCache) != (e == Released) {
						t.Fatalf("%v after ending %d", got, e)
					}
					if got == ServeEtcd && (verb == Watch || (verb == List && w.Zero)) {
						t.Fatalf("%v for a %v", got, verb)
					}
					if !w.Consistent && !w.Bounded && e != Released && e != FetchFailed && got != TooLargeForRead {
						t.Fatalf("a NotOlderThan read that timed out got %v", got)
					}
					zeroList := verb == List && w.Zero
					if (got == WaitAgain) != (e == TimedOutCatchingUp && zeroList && !w.Reject && (w.Consistent || w.Bounded)) {
						t.Fatalf("%v after ending %d", got, e)
					}
					if e == TimedOutCatchingUp && got != WaitAgain && got != w.After(TimedOut) {
						t.Fatalf("catching up ended %v, a timeout %v", got, w.After(TimedOut))
					}
				})
			}
		}
	}
}
