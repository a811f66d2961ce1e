package freshness

import (
	"errors"
	"fmt"
	"time"
)

// ErrFetchFailed wraps the cause of a failed revision fetch in the Err of
// every Failure that fetch covered. The read was not served; the caller may
// retry it as a new read, delegate it to etcd, or reject it.
var ErrFetchFailed = errors.New("freshness: revision fetch failed")

// Errors of the fetch and progress inputs: the caller's driver lost track
// of what it has in flight. An input that returns an error has not changed
// the Machine's state.
var (
	// ErrFetchInFlight is returned by FetchIssued while a fetch is in flight.
	ErrFetchInFlight = errors.New("freshness: a revision fetch is already in flight")
	// ErrNoFetchInFlight is returned by FetchAnswered, FetchFailed and
	// FetchUnanswered when no fetch is in flight.
	ErrNoFetchInFlight = errors.New("freshness: no revision fetch in flight")
	// ErrProgressInFlight is returned by ProgressRequestSent while a progress
	// request is in flight.
	ErrProgressInFlight = errors.New("freshness: a progress request is already in flight")
)

// Errors of ReadArrived: the read is refused as given, and the Machine's
// state has not changed.
var (
	// ErrDuplicateRead is returned by ReadArrived for an ID that is still
	// unresolved.
	ErrDuplicateRead = errors.New("freshness: read ID already in use")
	// ErrInvalidRead is returned by ReadArrived for an unknown Kind, a
	// negative MinRV or CatchUp, or a CatchUp that is not a Consistent
	// read's alone.
	ErrInvalidRead = errors.New("freshness: invalid read")
)

// ReadID names a read. It is chosen by the caller and must be unique among
// unresolved reads; it may be reused once the read is resolved or cancelled.
type ReadID uint64

// FetchID names a revision fetch. IDs start at 1 and increase by one for every
// FetchIssued. Zero means "no fetch".
type FetchID uint64

// Kind says what a read must wait for.
type Kind uint8

const (
	// Consistent is a read that must reflect every write that completed
	// before it arrived (LIST/GET/WATCH with resourceVersion="", and rv=0
	// under FreshResourceVersionZero). It needs a revision R from a fetch
	// issued after it arrived, then waits for the cache revision c >= R.
	Consistent Kind = iota + 1
	// NotOlderThan is a read with resourceVersion=N and the NotOlderThan
	// match. Its target is known at arrival (MinRV = N); it waits for c >= N
	// and never needs a fetch.
	NotOlderThan
)

func (k Kind) String() string { return enumString("Kind", uint8(k), "Consistent", "NotOlderThan") }

// Read describes a read as it arrives.
type Read struct {
	ID   ReadID
	Kind Kind
	// MinRV is the revision a NotOlderThan read needs. Ignored for
	// Consistent reads. Zero means the read may be served at once.
	MinRV int64
	// Deadline is when the read times out, compared with the time passed to
	// Tick. The zero Time means no deadline.
	Deadline time.Time
	// CatchUp, if positive, makes a Consistent read patient, the way
	// upstream's cacher serves a watch: it waits for its revision R for
	// as long as it is unresolved, and a fetch that ends unanswered
	// (FetchUnanswered) hands it to the next fetch instead of failing it.
	// Once R is known (FetchAnswered at time t) the read times out at
	// t+CatchUp unless c reached R. Deadline must be zero: what ends the
	// wait for R is the client leaving (ReadCancelled). Not allowed for
	// NotOlderThan reads, whose target is known at arrival.
	CatchUp time.Duration
}

// Stage is where an unresolved read is in the protocol.
type Stage uint8

const (
	// StageFetch is a Consistent read that has no revision yet. Either it
	// waits for the next fetch to be issued, or it is covered by the fetch
	// in flight. (A patient read never times out here: it has no deadline
	// until its revision is known.)
	StageFetch Stage = iota + 1
	// StageCache is a read that knows its target revision and waits for c
	// to reach it.
	StageCache
)

func (s Stage) String() string { return enumString("Stage", uint8(s), "fetch", "cache") }

// enumString names v of an enum whose values start at 1 (iota + 1), in the
// order of names; an unnamed value prints as typ(v).
func enumString(typ string, v uint8, names ...string) string {
	if v >= 1 && int(v) <= len(names) {
		return names[v-1]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// Release says that a read may be served from the cache now.
type Release struct {
	ID ReadID
	// Target is the revision the read needed: R from Fetch for a
	// Consistent read, MinRV for a NotOlderThan read.
	Target int64
	// RV is the cache revision c when the read was released. RV >= Target.
	// A snapshot taken after the release has an RV >= this one, so the
	// caller may serve the read from any snapshot taken from now on.
	RV int64
	// Fetch is the fetch whose answer gave Target, issued after the read
	// arrived. Zero for NotOlderThan reads.
	Fetch FetchID
}

// Failure says that a read must not be served from the cache because the
// fetch that covered it failed. errors.Is(Err, ErrFetchFailed) holds.
type Failure struct {
	ID    ReadID
	Fetch FetchID
	Err   error
}

// Timeout says that a read reached its deadline before it could be released.
type Timeout struct {
	ID ReadID
	// Stage is where the read was when it timed out: StageFetch if it had
	// no revision yet, StageCache if the cache had not reached Target.
	Stage Stage
	// Target is the revision the read was waiting for (StageCache only).
	Target int64
}

// Output is the Machine's output: what the caller must do next. See the
// package documentation for the caller's duties.
type Output struct {
	// IssueFetch asks the caller to issue one revision fetch: call
	// FetchIssued, then send the request. It stays set in later Outputs
	// until FetchIssued is called.
	IssueFetch bool
	// SendProgress asks the caller to send one progress request on the
	// cache's watch stream: call ProgressRequestSent, then send it. It
	// stays set in later Outputs until ProgressRequestSent is called.
	SendProgress bool

	// Released, Failed and TimedOut are resolutions. Each read appears in
	// exactly one of them, exactly once, and the Machine forgets it.
	Released []Release
	Failed   []Failure
	TimedOut []Timeout
}

// Empty reports whether rd asks for nothing.
func (rd Output) Empty() bool {
	return !rd.IssueFetch && !rd.SendProgress &&
		len(rd.Released) == 0 && len(rd.Failed) == 0 && len(rd.TimedOut) == 0
}

// Status is a snapshot of the Machine's state, for metrics, debugging and
// tests.
type Status struct {
	// Revision is the cache revision c.
	Revision int64
	// FetchInFlight and Fetch: whether a fetch is in flight, and the ID of
	// the last fetch issued.
	FetchInFlight bool
	Fetch         FetchID
	// ProgressInFlight: whether a progress request is in flight.
	ProgressInFlight bool
	// PendingRevision is the highest revision passed to RevisionPending;
	// it is still pending while above Revision.
	PendingRevision int64
	// Unresolved reads by where they are: waiting for the next fetch,
	// covered by the fetch in flight, waiting for c.
	Pending, Covered, Waiting int
}
