package freshness

import (
	"container/heap"
	"fmt"
	"time"
)

// stage is a read's internal state. The exported Stage folds pending and
// covered into StageFetch.
type stage uint8

const (
	stagePending stage = iota + 1 // Consistent, not covered by any fetch yet
	stageCovered                  // Consistent, covered by the fetch in flight
	stageWaiting                  // target known, c < target
	stageDone                     // resolved or cancelled; only stale list entries point here
)

type read struct {
	Read
	stage  stage
	fetch  FetchID // covering fetch (stageCovered, and stageWaiting for Consistent)
	target int64   // stageWaiting only

	targetIdx   int // index in Machine.waiting, or -1
	deadlineIdx int // index in Machine.deadlines, or -1
}

// Machine is the freshness state machine of one cache. It is not safe for
// concurrent use: the caller serializes every call (see the package
// documentation). The zero value is not usable; call New.
type Machine struct {
	rev int64 // cache revision c; never decreases

	reads map[ReadID]*read // every unresolved read

	// pending holds Consistent reads that no fetch covers yet, in arrival
	// order. Entries of cancelled or timed-out reads stay until the next
	// FetchIssued (or until no pending read is left) and are skipped.
	pending  []*read
	nPending int

	fetchInFlight bool
	lastFetch     FetchID
	covered       []*read // reads covered by the fetch in flight; same skipping rule
	nCovered      int

	progressInFlight bool
	// progressSentAt is when the request in flight was sent; stall is how
	// long it may stay unanswered before it counts as lost.
	progressSentAt time.Time
	stall          time.Duration
	// noProgress: Options.NoProgress.
	noProgress bool
	// pendingRev is the highest revision the cache holds events of that
	// nothing has proven complete yet (RevisionPending); it matters only
	// while above rev.
	pendingRev int64

	waiting   targetHeap   // stageWaiting reads by target
	deadlines deadlineHeap // unresolved reads that have a deadline

	out Output // resolutions not yet handed out by Output
}

// Options configures a Machine. The zero value is valid.
type Options struct {
	// Revision is the initial cache revision c, e.g. the RV of the initial
	// list if the Machine is created after it. Default 0.
	Revision int64
	// NoProgress says the cache's progress notifications cannot be
	// trusted (an etcd with etcd#15220, rejected by the version guard).
	// The Machine then never asks for a progress request: waits end by
	// events and deadlines only, as upstream's cacher waits when etcd does
	// not support progress requests.
	NoProgress bool
	// ProgressStall is how long a progress request may stay unanswered
	// while something needs it before the Machine considers it lost (the
	// watch stream broke, etcd was unreachable, or etcd dropped it) and
	// asks for another. Zero: DefaultProgressStall.
	ProgressStall time.Duration
}

// DefaultProgressStall is Options.ProgressStall's default: upstream's
// cacher sends a progress request every 100 ms while reads wait, so a
// request etcd drops costs upstream at most that long, and freshcache
// matches it. etcd drops one whenever a watch on the stream is not synced
// (progressIfSync), which a loaded apiserver's shared stream often is: at
// 75 hollow nodes, 6-11% of the gate's progress requests stalled in the
// cells with the slowest waits (docs/investigations/cluster-targets.md,
// finding 10). A request that is only slow is then sent twice, and etcd
// answers both.
const DefaultProgressStall = 100 * time.Millisecond

// New returns a Machine with no reads, no fetch and no progress request in
// flight.
func New(opts Options) (*Machine, error) {
	if opts.Revision < 0 {
		return nil, fmt.Errorf("freshness: negative initial revision %d", opts.Revision)
	}
	if opts.ProgressStall < 0 {
		return nil, fmt.Errorf("freshness: negative progress stall %v", opts.ProgressStall)
	}
	if opts.ProgressStall == 0 {
		opts.ProgressStall = DefaultProgressStall
	}
	return &Machine{
		rev:        opts.Revision,
		reads:      make(map[ReadID]*read),
		noProgress: opts.NoProgress,
		stall:      opts.ProgressStall,
	}, nil
}

// ReadArrived registers a read. A Consistent read waits for the next fetch
// issued after this call. A NotOlderThan read is released at once if
// c >= MinRV, otherwise it waits for c to reach MinRV.
func (m *Machine) ReadArrived(rd Read) error {
	if _, ok := m.reads[rd.ID]; ok {
		return fmt.Errorf("%w: %d", ErrDuplicateRead, rd.ID)
	}
	switch rd.Kind {
	case Consistent:
		switch {
		case rd.CatchUp < 0:
			return fmt.Errorf("%w: negative CatchUp %v for read %d", ErrInvalidRead, rd.CatchUp, rd.ID)
		case rd.CatchUp > 0 && !rd.Deadline.IsZero():
			return fmt.Errorf("%w: read %d has both a Deadline and a CatchUp", ErrInvalidRead, rd.ID)
		}
	case NotOlderThan:
		if rd.MinRV < 0 {
			return fmt.Errorf("%w: negative MinRV %d for read %d", ErrInvalidRead, rd.MinRV, rd.ID)
		}
		if rd.CatchUp != 0 {
			return fmt.Errorf("%w: CatchUp for NotOlderThan read %d (give it a Deadline)", ErrInvalidRead, rd.ID)
		}
	default:
		return fmt.Errorf("%w: unknown kind %v for read %d", ErrInvalidRead, rd.Kind, rd.ID)
	}

	r := &read{Read: rd, targetIdx: -1, deadlineIdx: -1}
	switch rd.Kind {
	case Consistent:
		r.stage = stagePending
		m.pending = append(m.pending, r)
		m.nPending++
	case NotOlderThan:
		if m.rev >= rd.MinRV {
			m.out.Released = append(m.out.Released, Release{ID: rd.ID, Target: rd.MinRV, RV: m.rev})
			m.checkInvariants()
			return nil
		}
		r.stage = stageWaiting
		r.target = rd.MinRV
		heap.Push(&m.waiting, r)
	}
	m.reads[rd.ID] = r
	if !rd.Deadline.IsZero() {
		heap.Push(&m.deadlines, r)
	}
	m.checkInvariants()
	return nil
}

// FetchIssued records that the caller is issuing a revision fetch. Every
// read that arrived before this call and has no revision yet is covered by
// it and will share its answer. The caller must call it before it sends
// the request, never after. It returns the new fetch's ID.
//
// The caller may issue a fetch that Output did not ask for (e.g. to prefetch);
// it then covers whatever reads are pending, possibly none.
func (m *Machine) FetchIssued() (FetchID, error) {
	if m.fetchInFlight {
		return 0, ErrFetchInFlight
	}
	m.fetchInFlight = true
	m.lastFetch++
	m.covered = m.covered[:0]
	for _, r := range m.pending {
		if r.stage != stagePending {
			continue
		}
		r.stage = stageCovered
		r.fetch = m.lastFetch
		m.covered = append(m.covered, r)
	}
	clear(m.pending)
	m.pending = m.pending[:0]
	m.nCovered = m.nPending
	m.nPending = 0
	m.checkInvariants()
	return m.lastFetch, nil
}

// FetchAnswered delivers the answer R of the fetch in flight, which
// arrived at time at (on the clock Tick is given). Every read it covers
// gets target R: it is released at once if c >= R (the fast path),
// otherwise it waits for c to reach R; a patient read (Read.CatchUp) that
// waits gets its deadline, at+CatchUp.
func (m *Machine) FetchAnswered(rev int64, at time.Time) error {
	return m.endFetch(func(r *read) {
		if m.rev >= rev {
			m.resolve(r)
			m.out.Released = append(m.out.Released, Release{ID: r.ID, Target: rev, RV: m.rev, Fetch: r.fetch})
			return
		}
		r.stage = stageWaiting
		r.target = rev
		heap.Push(&m.waiting, r)
		if r.CatchUp > 0 {
			r.Deadline = at.Add(r.CatchUp)
			heap.Push(&m.deadlines, r)
		}
	}, nil)
}

// FetchFailed reports that the fetch in flight failed with cause: etcd
// answered with an error. Every read it covers fails with an error that
// wraps ErrFetchFailed and cause, patient ones too, as upstream's watch
// fails when reading etcd's revision returns an error. Reads that arrived
// after it was issued are not affected: they wait for the next fetch. (A
// fetch that ran out of time instead is FetchUnanswered.)
func (m *Machine) FetchFailed(cause error) error {
	err := m.fetchError(cause)
	return m.endFetch(func(r *read) {
		m.resolve(r)
		m.out.Failed = append(m.out.Failed, Failure{ID: r.ID, Fetch: r.fetch, Err: err})
	}, nil)
}

// FetchUnanswered reports that the fetch in flight ended without an answer:
// neither a revision nor a refusal from etcd, only the caller's own time
// limit for it (a member that cannot reach its leader holds a linearizable
// read until the client gives up). Patient reads it covered (Read.CatchUp)
// wait for the next fetch, which the next Ready asks for, as upstream's
// watch keeps waiting for etcd's revision under its client's context.
// Every other read it covered fails as with FetchFailed(cause).
func (m *Machine) FetchUnanswered(cause error) error {
	err := m.fetchError(cause)
	var again []*read
	return m.endFetch(func(r *read) {
		if r.CatchUp > 0 {
			// Any later fetch is issued after the read arrived, so its
			// answer serves the read as well as this one's would have.
			r.stage, r.fetch = stagePending, 0
			m.nCovered--
			again = append(again, r)
			return
		}
		m.resolve(r)
		m.out.Failed = append(m.out.Failed, Failure{ID: r.ID, Fetch: r.fetch, Err: err})
	}, func() {
		// They arrived before every read now pending: keep arrival order.
		m.pending = append(again, m.pending...)
		m.nPending += len(again)
	})
}

// endFetch ends the fetch in flight, for FetchAnswered, FetchFailed and
// FetchUnanswered: it hands each read the fetch still covers to each, in
// arrival order, runs then (if not nil), and forgets the covered reads.
func (m *Machine) endFetch(each func(r *read), then func()) error {
	if !m.fetchInFlight {
		return ErrNoFetchInFlight
	}
	m.fetchInFlight = false
	for _, r := range m.covered {
		if r.stage == stageCovered {
			each(r)
		}
	}
	if then != nil {
		then()
	}
	m.clearCovered()
	m.checkInvariants()
	return nil
}

// EventApplied reports that the cache has applied every event of its
// resource up to and including rv. c becomes max(c, rv), and every read whose
// target is now <= c is released.
func (m *Machine) EventApplied(rv int64) {
	m.advance(rv)
}

// ProgressNotified reports a watch progress notification at rv: the cache
// has seen every event of its resource up to rv. Same effect on c as
// EventApplied. It does not end the progress request in flight; call
// ProgressAnswered for that.
func (m *Machine) ProgressNotified(rv int64) {
	m.advance(rv)
}

// RevisionPending reports that the cache has received events of revision
// rv that it cannot apply yet, because nothing proves that rv is complete:
// etcd gives every key of one transaction the same revision, and a later
// event of it may still be on its way. While rv > c, Output asks for a
// progress request, whose notification (at >= rv) proves rv complete;
// EventApplied(rv) then ends the need.
func (m *Machine) RevisionPending(rv int64) {
	if rv > m.pendingRev {
		m.pendingRev = rv
	}
	m.checkInvariants()
}

// ProgressRequestSent records that the caller is sending a progress
// request at time at (on the clock Tick is given). If no notification
// answers it within Options.ProgressStall while reads wait or a revision is
// pending, Tick declares it lost and Output asks for another.
func (m *Machine) ProgressRequestSent(at time.Time) error {
	if m.progressInFlight {
		return ErrProgressInFlight
	}
	m.progressInFlight = true
	m.progressSentAt = at
	m.checkInvariants()
	return nil
}

// ProgressAnswered records that the progress request in flight is over:
// answered, or lost because the watch stream broke. If reads still wait,
// the next Output asks for another. Calling it with no request in flight
// (e.g. for an unsolicited notification) does nothing.
func (m *Machine) ProgressAnswered() {
	m.progressInFlight = false
	m.checkInvariants()
}

// Tick passes the current time. Every unresolved read whose deadline is at or
// before now times out, and a progress request that stalled (see
// ProgressRequestSent) counts as lost.
func (m *Machine) Tick(now time.Time) {
	if stall, ok := m.stallDeadline(); ok && !now.Before(stall) {
		m.progressInFlight = false
	}
	for len(m.deadlines) > 0 && !m.deadlines[0].Deadline.After(now) {
		r := m.deadlines[0]
		to := Timeout{ID: r.ID, Stage: StageFetch}
		if r.stage == stageWaiting {
			to.Stage = StageCache
			to.Target = r.target
		}
		m.resolve(r)
		m.out.TimedOut = append(m.out.TimedOut, to)
	}
	m.checkInvariants()
}

// NextDeadline returns the earliest time Tick has work at: a read's
// deadline or the stall time of the progress request in flight, so that
// the caller can arm one timer and call Tick when it fires.
func (m *Machine) NextDeadline() (time.Time, bool) {
	next, ok := m.stallDeadline()
	if len(m.deadlines) > 0 && (!ok || m.deadlines[0].Deadline.Before(next)) {
		next, ok = m.deadlines[0].Deadline, true
	}
	return next, ok
}

// stallDeadline is when the progress request in flight counts as lost, if
// one is in flight and something needs it.
func (m *Machine) stallDeadline() (time.Time, bool) {
	if !m.progressInFlight || !m.progressWanted() {
		return time.Time{}, false
	}
	return m.progressSentAt.Add(m.stall), true
}

// ReadCancelled forgets an unresolved read (its client went away). It
// produces no output. It reports whether the read was unresolved; false
// means it was resolved already (possibly in an Output the caller has not
// processed yet) or never existed.
func (m *Machine) ReadCancelled(id ReadID) bool {
	r, ok := m.reads[id]
	if !ok {
		return false
	}
	m.resolve(r)
	m.checkInvariants()
	return true
}

// HasOutput reports whether Output would return a non-empty Output.
func (m *Machine) HasOutput() bool {
	return m.issueFetch() || m.sendProgress() ||
		len(m.out.Released) > 0 || len(m.out.Failed) > 0 || len(m.out.TimedOut) > 0
}

// Output returns what the caller must do next. The resolutions in it are
// handed over: they are never returned again. The two requests stay asked
// for until the caller acknowledges them with FetchIssued and
// ProgressRequestSent.
func (m *Machine) Output() Output {
	rd := m.out
	rd.IssueFetch = m.issueFetch()
	rd.SendProgress = m.sendProgress()
	m.out = Output{}
	return rd
}

// Status returns a snapshot of the Machine's state.
func (m *Machine) Status() Status {
	return Status{
		Revision:         m.rev,
		FetchInFlight:    m.fetchInFlight,
		Fetch:            m.lastFetch,
		ProgressInFlight: m.progressInFlight,
		PendingRevision:  m.pendingRev,
		Pending:          m.nPending,
		Covered:          m.nCovered,
		Waiting:          len(m.waiting),
	}
}

func (m *Machine) issueFetch() bool { return !m.fetchInFlight && m.nPending > 0 }

func (m *Machine) sendProgress() bool { return !m.progressInFlight && m.progressWanted() }

// progressWanted reports whether something needs a progress notification:
// reads wait for c, or a revision is pending.
func (m *Machine) progressWanted() bool {
	return !m.noProgress && (len(m.waiting) > 0 || m.pendingRev > m.rev)
}

func (m *Machine) advance(rv int64) {
	if rv > m.rev {
		m.rev = rv
		for len(m.waiting) > 0 && m.waiting[0].target <= m.rev {
			r := m.waiting[0]
			m.resolve(r)
			m.out.Released = append(m.out.Released, Release{ID: r.ID, Target: r.target, RV: m.rev, Fetch: r.fetch})
		}
	}
	m.checkInvariants()
}

// resolve removes r from every structure that holds it. Stale entries in
// pending and covered are skipped by stage, the heaps are exact.
func (m *Machine) resolve(r *read) {
	switch r.stage {
	case stagePending:
		m.nPending--
		if m.nPending == 0 {
			clear(m.pending)
			m.pending = m.pending[:0]
		}
	case stageCovered:
		m.nCovered--
	case stageWaiting:
		heap.Remove(&m.waiting, r.targetIdx)
	}
	if r.deadlineIdx >= 0 {
		heap.Remove(&m.deadlines, r.deadlineIdx)
	}
	r.stage = stageDone
	delete(m.reads, r.ID)
}

// fetchError is the Err of the Failures of the fetch in flight.
func (m *Machine) fetchError(cause error) error {
	if cause == nil {
		return ErrFetchFailed
	}
	return fmt.Errorf("%w (fetch %d): %w", ErrFetchFailed, m.lastFetch, cause)
}

func (m *Machine) clearCovered() {
	clear(m.covered)
	m.covered = m.covered[:0]
	m.nCovered = 0
}
