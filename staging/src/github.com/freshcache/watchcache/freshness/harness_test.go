package freshness

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// harness drives a Machine with a simulated etcd and a reference model, and
// checks every Output against both the protocol's properties and the model.
// The randomized test and the fuzz target feed it (op, arg) pairs.
//
// The simulated world:
//   - etcd's revision E grows with writes;
//   - a fetch issued when etcd was at E0 answers some R in [E0, E_now]
//     (a linearizable answer taken between issue and response);
//   - events advance the cache revision c to some rv in (c, E];
//   - a progress request sent when etcd was at P answers with some rv in
//     [P, E] (the watch is synced up to rv, so c may jump there).
type harness struct {
	m *Machine

	step int
	etcd int64 // E
	c    int64 // the model's cache revision
	now  time.Time

	nextID ReadID
	live   map[ReadID]*mread
	done   map[ReadID]string // how each resolved read ended

	fetches       map[FetchID]*mfetch
	fetchInFlight FetchID // 0: none

	progressInFlight bool
	progressBase     int64     // E when the progress request in flight was sent
	progressSentAt   time.Time // and when
	// pending is the highest revision reported with RevisionPending.
	pending int64
	// noProgress: the Machine runs with Options.NoProgress.
	noProgress bool

	lastOutput Output // flags from the last drain, to decide whether to act
	lastOp     byte
	// cooperative makes every answer the freshest possible (etcd's current
	// revision), as drain needs.
	cooperative bool
	trace       []string

	// counters, for tests that want to see that something happened
	released, failed, timedOut, cancelled int
	// requeued counts patient reads an unanswered fetch sent on to the
	// next one.
	requeued int
}

type mread struct {
	Read
	arrivedStep   int
	etcdAtArrival int64
	fetch         FetchID // covering fetch, Consistent only
	hasTarget     bool
	target        int64
}

type mfetch struct {
	issuedStep  int
	etcdAtIssue int64
	answer      int64
}

const numOps = 14

var opNames = [numOps]string{
	"consistent", "notOlderThan", "write", "fetchIssue", "fetchAnswer", "fetchFail",
	"event", "progressSend", "progressAnswer", "unsolicitedProgress", "tick", "cancel",
	"revisionPending", "fetchUnanswered",
}

var epoch = time.Unix(1_000_000_000, 0)

func newHarness() *harness { return newHarnessWith(Options{}) }

func newHarnessWith(opts Options) *harness {
	opts.ProgressStall = testStall
	m, err := New(opts)
	if err != nil {
		panic(err)
	}
	return &harness{
		m:          m,
		noProgress: opts.NoProgress,
		etcd:       1,
		now:        epoch,
		nextID:     1,
		live:       make(map[ReadID]*mread),
		done:       make(map[ReadID]string),
		fetches:    make(map[FetchID]*mfetch),
	}
}

func (h *harness) errorf(format string, args ...any) error {
	tail := h.trace
	if len(tail) > 30 {
		tail = tail[len(tail)-30:]
	}
	return fmt.Errorf("step %d (%s): %s\nlast ops:\n  %s", h.step, opNames[h.lastOp], fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
}

func (h *harness) deadline(arg byte) time.Time {
	if arg%4 == 0 {
		return time.Time{}
	}
	return h.now.Add(time.Duration(arg%50) * time.Millisecond)
}

// do applies one operation and checks the result.
func (h *harness) do(op, arg byte) error {
	h.step++
	op %= numOps
	h.lastOp = op
	expectTimeouts := false
	var expectFailed []ReadID
	var failedFetch FetchID

	switch op {
	case 0: // a consistent read arrives; one in five is patient (a watch)
		r := Read{ID: h.nextID, Kind: Consistent, Deadline: h.deadline(arg)}
		if arg%5 == 1 {
			r.Deadline, r.CatchUp = time.Time{}, time.Duration(1+arg%40)*time.Millisecond
		}
		h.nextID++
		if err := h.m.ReadArrived(r); err != nil {
			return h.errorf("ReadArrived(%+v): %v", r, err)
		}
		h.live[r.ID] = &mread{Read: r, arrivedStep: h.step, etcdAtArrival: h.etcd}
		h.note("read %d consistent deadline=%v catchUp=%v", r.ID, h.rel(r.Deadline), r.CatchUp)
		// A duplicate must be refused without changing anything.
		if arg%7 == 0 {
			if err := h.m.ReadArrived(r); !errors.Is(err, ErrDuplicateRead) {
				return h.errorf("duplicate ReadArrived: err=%v", err)
			}
		}
	case 1: // a NotOlderThan read arrives
		minRV := int64(arg) % (h.etcd + 3)
		r := Read{ID: h.nextID, Kind: NotOlderThan, MinRV: minRV, Deadline: h.deadline(arg / 3)}
		h.nextID++
		if err := h.m.ReadArrived(r); err != nil {
			return h.errorf("ReadArrived(%+v): %v", r, err)
		}
		h.live[r.ID] = &mread{Read: r, arrivedStep: h.step, etcdAtArrival: h.etcd, hasTarget: true, target: minRV}
		h.note("read %d notOlderThan %d deadline=%v", r.ID, minRV, h.rel(r.Deadline))
	case 2: // a write completes in etcd
		h.etcd += 1 + int64(arg%3)
		h.note("write E=%d", h.etcd)
	case 3: // issue a fetch: when asked, and sometimes unasked (prefetch)
		if !h.lastOutput.IssueFetch && arg%2 == 0 {
			h.note("fetchIssue skipped")
			break
		}
		id, err := h.m.FetchIssued()
		if h.fetchInFlight != 0 {
			if !errors.Is(err, ErrFetchInFlight) {
				return h.errorf("FetchIssued with fetch %d in flight: id=%d err=%v", h.fetchInFlight, id, err)
			}
			h.note("fetchIssue refused (in flight)")
			break
		}
		if err != nil {
			return h.errorf("FetchIssued: %v", err)
		}
		if _, dup := h.fetches[id]; dup || id == 0 {
			return h.errorf("FetchIssued returned reused ID %d", id)
		}
		h.fetches[id] = &mfetch{issuedStep: h.step, etcdAtIssue: h.etcd}
		h.fetchInFlight = id
		for _, r := range h.live {
			if r.Kind == Consistent && r.fetch == 0 {
				r.fetch = id
			}
		}
		h.note("fetchIssue %d at E=%d", id, h.etcd)
	case 4: // the fetch in flight answers
		if h.fetchInFlight == 0 {
			if err := h.m.FetchAnswered(h.etcd, h.now); !errors.Is(err, ErrNoFetchInFlight) {
				return h.errorf("FetchAnswered with none in flight: err=%v", err)
			}
			break
		}
		f := h.fetches[h.fetchInFlight]
		f.answer = f.etcdAtIssue + int64(arg)%(h.etcd-f.etcdAtIssue+1)
		if h.cooperative {
			f.answer = h.etcd
		}
		if err := h.m.FetchAnswered(f.answer, h.now); err != nil {
			return h.errorf("FetchAnswered(%d): %v", f.answer, err)
		}
		for _, r := range h.live {
			if r.fetch == h.fetchInFlight && !r.hasTarget {
				r.hasTarget, r.target = true, f.answer
				if r.CatchUp > 0 {
					// Its deadline starts now; released at once if c >= R.
					r.Deadline = h.now.Add(r.CatchUp)
				}
			}
		}
		h.note("fetchAnswer %d R=%d", h.fetchInFlight, f.answer)
		h.fetchInFlight = 0
	case 5: // the fetch in flight fails
		cause := errors.New("etcd unavailable")
		if h.fetchInFlight == 0 {
			if err := h.m.FetchFailed(cause); !errors.Is(err, ErrNoFetchInFlight) {
				return h.errorf("FetchFailed with none in flight: err=%v", err)
			}
			break
		}
		if err := h.m.FetchFailed(cause); err != nil {
			return h.errorf("FetchFailed: %v", err)
		}
		for id, r := range h.live {
			if r.fetch == h.fetchInFlight && !r.hasTarget {
				expectFailed = append(expectFailed, id)
			}
		}
		failedFetch = h.fetchInFlight
		h.note("fetchFail %d", h.fetchInFlight)
		h.fetchInFlight = 0
	case 6: // the cache applies events
		var rv int64
		if h.cooperative {
			rv = h.etcd
		} else if h.c < h.etcd {
			rv = h.c + 1 + int64(arg)%(h.etcd-h.c)
		} else {
			rv = h.c - int64(arg%2) // stale or repeated: must be a no-op
		}
		h.m.EventApplied(rv)
		h.c = max(h.c, rv)
		h.note("event rv=%d c=%d", rv, h.c)
	case 7: // send a progress request: when asked, and sometimes unasked
		if !h.lastOutput.SendProgress && arg%2 == 0 {
			h.note("progressSend skipped")
			break
		}
		err := h.m.ProgressRequestSent(h.now)
		if h.progressInFlight {
			if !errors.Is(err, ErrProgressInFlight) {
				return h.errorf("ProgressRequestSent while in flight: err=%v", err)
			}
			break
		}
		if err != nil {
			return h.errorf("ProgressRequestSent: %v", err)
		}
		h.progressInFlight, h.progressBase, h.progressSentAt = true, h.etcd, h.now
		h.note("progressSend at E=%d", h.etcd)
	case 8: // the progress request in flight is answered
		if !h.progressInFlight {
			h.m.ProgressAnswered() // no-op
			break
		}
		rv := h.progressBase + int64(arg)%(h.etcd-h.progressBase+1)
		if h.cooperative {
			rv = h.etcd
		}
		h.m.ProgressNotified(rv)
		h.m.ProgressAnswered()
		h.c = max(h.c, rv)
		h.progressInFlight = false
		h.note("progressAnswer rv=%d c=%d", rv, h.c)
	case 9: // an unsolicited progress notification (or a broken stream)
		rv := h.c + int64(arg)%(h.etcd-h.c+1)
		h.m.ProgressNotified(rv)
		h.c = max(h.c, rv)
		if arg%3 == 0 {
			h.m.ProgressAnswered()
			h.progressInFlight = false
		}
		h.note("unsolicitedProgress rv=%d c=%d answered=%v", rv, h.c, arg%3 == 0)
	case 10: // time passes
		h.now = h.now.Add(time.Duration(arg%20) * time.Millisecond)
		if h.progressInFlight && h.progressWanted() && !h.now.Before(h.progressSentAt.Add(testStall)) {
			// Unanswered for too long: lost. A late answer is then an
			// unsolicited notification.
			h.progressInFlight = false
			h.note("progress request lost")
		}
		h.m.Tick(h.now)
		expectTimeouts = true
		h.note("tick now=%v", h.rel(h.now))
	case 12: // events of a revision arrived, not yet proven complete
		if h.c >= h.etcd {
			h.note("revisionPending skipped")
			break
		}
		rv := h.c + 1 + int64(arg)%(h.etcd-h.c)
		h.m.RevisionPending(rv)
		h.pending = max(h.pending, rv)
		h.note("revisionPending rv=%d", rv)
	case 13: // the fetch in flight ends unanswered (it ran out of time)
		cause := errors.New("context deadline exceeded")
		if h.fetchInFlight == 0 {
			if err := h.m.FetchUnanswered(cause); !errors.Is(err, ErrNoFetchInFlight) {
				return h.errorf("FetchUnanswered with none in flight: err=%v", err)
			}
			break
		}
		if err := h.m.FetchUnanswered(cause); err != nil {
			return h.errorf("FetchUnanswered: %v", err)
		}
		for id, r := range h.live {
			if r.fetch != h.fetchInFlight || r.hasTarget {
				continue
			}
			if r.CatchUp > 0 {
				r.fetch = 0 // waits for the next fetch
				h.requeued++
				continue
			}
			expectFailed = append(expectFailed, id)
		}
		failedFetch = h.fetchInFlight
		h.note("fetchUnanswered %d", h.fetchInFlight)
		h.fetchInFlight = 0
	case 11: // a client goes away
		ids := h.liveIDs()
		var id ReadID
		if len(ids) == 0 || arg%5 == 0 {
			id = h.nextID + 1000 // never issued
		} else {
			id = ids[int(arg)%len(ids)]
		}
		_, isLive := h.live[id]
		if got := h.m.ReadCancelled(id); got != isLive {
			return h.errorf("ReadCancelled(%d)=%v, live=%v", id, got, isLive)
		}
		if isLive {
			delete(h.live, id)
			h.done[id] = "cancelled"
			h.cancelled++
		}
		h.note("cancel %d live=%v", id, isLive)
	}
	return h.check(expectTimeouts, expectFailed, failedFetch)
}

// testStall is the harness Machine's Options.ProgressStall.
const testStall = 30 * time.Millisecond

// progressWanted is the model's view of whether a progress notification is
// needed: a read waits for c, or a revision is pending.
func (h *harness) progressWanted() bool {
	if h.noProgress {
		return false
	}
	if h.pending > h.c {
		return true
	}
	for _, r := range h.live {
		if r.hasTarget {
			return true
		}
	}
	return false
}

// check drains the Machine's Output and compares it with the model.
func (h *harness) check(expectTimeouts bool, expectFailed []ReadID, failedFetch FetchID) error {
	if err := h.m.verify(); err != nil {
		return h.errorf("invariants: %v", err)
	}
	st := h.m.Status()
	if st.Revision != h.c {
		return h.errorf("c=%d, model c=%d", st.Revision, h.c)
	}
	if st.FetchInFlight != (h.fetchInFlight != 0) || st.ProgressInFlight != h.progressInFlight {
		return h.errorf("status %+v, model fetch=%d progress=%v", st, h.fetchInFlight, h.progressInFlight)
	}

	hasOutput := h.m.HasOutput()
	rd := h.m.Output()
	if hasOutput == rd.Empty() {
		return h.errorf("HasOutput=%v but Output=%+v", hasOutput, rd)
	}
	if h.m.HasOutput() && (len(h.m.out.Released) > 0 || len(h.m.out.Failed) > 0 || len(h.m.out.TimedOut) > 0) {
		return h.errorf("resolutions returned twice")
	}

	// Which reads the model expects resolved now.
	wantRelease := map[ReadID]bool{}
	wantTimeout := map[ReadID]bool{}
	wantFail := map[ReadID]bool{}
	for _, id := range expectFailed {
		wantFail[id] = true
	}
	for id, r := range h.live {
		switch {
		case wantFail[id]:
		case r.hasTarget && r.target <= h.c:
			wantRelease[id] = true
		case expectTimeouts && !r.Deadline.IsZero() && !r.Deadline.After(h.now):
			wantTimeout[id] = true
		}
	}

	for _, rel := range rd.Released {
		r, ok := h.live[rel.ID]
		if !ok {
			return h.errorf("released %d, which is not live (%q)", rel.ID, h.done[rel.ID])
		}
		if !wantRelease[rel.ID] {
			return h.errorf("released %+v unexpectedly (model %+v)", rel, *r)
		}
		delete(wantRelease, rel.ID)
		// (b) no release before c >= target.
		if rel.RV < rel.Target || rel.RV != h.c {
			return h.errorf("release %+v with c=%d", rel, h.c)
		}
		if rel.Target != r.target {
			return h.errorf("release %+v, model target %d", rel, r.target)
		}
		switch r.Kind {
		case Consistent:
			// (a) issued-after-arrival: the answer came from a fetch
			// issued after the read arrived, so it covers every write
			// that completed before the read arrived.
			f, ok := h.fetches[rel.Fetch]
			if !ok {
				return h.errorf("release %+v names unknown fetch", rel)
			}
			if f.issuedStep <= r.arrivedStep {
				return h.errorf("read %d (arrived step %d) used fetch %d issued at step %d", rel.ID, r.arrivedStep, rel.Fetch, f.issuedStep)
			}
			if rel.Target != f.answer || rel.Target < r.etcdAtArrival {
				return h.errorf("release %+v: fetch answered %d, etcd at arrival %d", rel, f.answer, r.etcdAtArrival)
			}
		case NotOlderThan:
			if rel.Fetch != 0 || rel.Target != r.MinRV {
				return h.errorf("release %+v for NotOlderThan %d", rel, r.MinRV)
			}
		}
		h.resolved(rel.ID, "released")
		h.released++
	}
	for _, f := range rd.Failed {
		if !wantFail[f.ID] {
			return h.errorf("failed %+v unexpectedly", f)
		}
		delete(wantFail, f.ID)
		if f.Fetch != failedFetch || !errors.Is(f.Err, ErrFetchFailed) {
			return h.errorf("failure %+v, want fetch %d and ErrFetchFailed", f, failedFetch)
		}
		h.resolved(f.ID, "failed")
		h.failed++
	}
	for _, to := range rd.TimedOut {
		r, ok := h.live[to.ID]
		if !ok || !wantTimeout[to.ID] {
			return h.errorf("timed out %+v unexpectedly", to)
		}
		delete(wantTimeout, to.ID)
		wantStage := StageFetch
		if r.hasTarget {
			wantStage = StageCache
		}
		if to.Stage != wantStage || (wantStage == StageCache && to.Target != r.target) {
			return h.errorf("timeout %+v, model %+v", to, *r)
		}
		h.resolved(to.ID, "timed out")
		h.timedOut++
	}
	if len(wantRelease)+len(wantFail)+len(wantTimeout) > 0 {
		return h.errorf("not resolved: release %v fail %v timeout %v", keys(wantRelease), keys(wantFail), keys(wantTimeout))
	}

	// (c) the requests: asked for exactly when the protocol says, never
	// while one is in flight.
	needFetch, waiter := false, false
	for _, r := range h.live {
		needFetch = needFetch || (r.Kind == Consistent && r.fetch == 0)
		waiter = waiter || r.hasTarget
	}
	if want := h.fetchInFlight == 0 && needFetch; rd.IssueFetch != want {
		return h.errorf("IssueFetch=%v, want %v", rd.IssueFetch, want)
	}
	if want := !h.noProgress && !h.progressInFlight && (waiter || h.pending > h.c); rd.SendProgress != want {
		return h.errorf("SendProgress=%v, want %v", rd.SendProgress, want)
	}
	// One timer suffices: NextDeadline is the earliest read deadline or
	// the stall time of a needed progress request.
	var want time.Time
	for _, r := range h.live {
		if !r.Deadline.IsZero() && (want.IsZero() || r.Deadline.Before(want)) {
			want = r.Deadline
		}
	}
	if h.progressInFlight && h.progressWanted() {
		if stall := h.progressSentAt.Add(testStall); want.IsZero() || stall.Before(want) {
			want = stall
		}
	}
	if got, ok := h.m.NextDeadline(); ok != !want.IsZero() || (ok && !got.Equal(want)) {
		return h.errorf("NextDeadline=%v,%v, want %v", h.rel(got), ok, h.rel(want))
	}
	h.lastOutput = rd
	return nil
}

func (h *harness) resolved(id ReadID, how string) {
	delete(h.live, id)
	h.done[id] = how
}

// drain plays a cooperative world until every read is resolved: etcd
// catches up with every NotOlderThan target, and every request the Machine
// asks for is carried out and answered with etcd's current revision.
// It checks liveness (d).
func (h *harness) drain() error {
	h.cooperative = true
	defer func() { h.cooperative = false }()
	for range 20 {
		if len(h.live) == 0 {
			return nil
		}
		for _, r := range h.live {
			for r.Kind == NotOlderThan && h.etcd < r.MinRV {
				if err := h.do(2, 0); err != nil {
					return err
				}
			}
		}
		// Answer whatever is in flight with E (arg chosen to hit E), and
		// carry out what the Machine asks for, in this order; each
		// condition is read just before its step.
		for _, s := range []struct {
			when    func() bool
			op, arg byte
		}{
			{func() bool { return h.fetchInFlight != 0 }, 4, 0},
			{func() bool { return h.lastOutput.IssueFetch }, 3, 1},
			{func() bool { return h.progressInFlight }, 8, 0},
			{func() bool { return h.lastOutput.SendProgress }, 7, 1},
			// Nothing asks for progress: events alone end the waits.
			{func() bool { return h.noProgress }, 6, 0},
		} {
			if s.when() {
				if err := h.do(s.op, s.arg); err != nil {
					return err
				}
			}
		}
	}
	return h.errorf("liveness: reads %v never resolved", h.liveIDs())
}

func (h *harness) liveIDs() []ReadID {
	return slices.Sorted(maps.Keys(h.live))
}

func (h *harness) note(format string, args ...any) {
	h.trace = append(h.trace, fmt.Sprintf("%d: ", h.step)+fmt.Sprintf(format, args...))
	if len(h.trace) > 200 {
		h.trace = slices.Clone(h.trace[100:])
	}
}

func (h *harness) rel(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.Sub(epoch).String()
}

func keys(m map[ReadID]bool) []ReadID { return slices.Sorted(maps.Keys(m)) }
