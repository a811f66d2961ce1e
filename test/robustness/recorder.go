package robustness

import (
	"sync"
	"time"

	"github.com/freshcache/freshcache/test/robustness/history"
)

// Recorder collects a run's history from many goroutines.
type Recorder struct {
	start time.Time

	// mu guards everything below.
	mu       sync.Mutex
	nextID   int
	ops      []history.Op
	sessions []history.WatchSession
	faults   []history.Fault
}

// NewRecorder starts the run's clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is nanoseconds since the start of the run (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// AddOp records a finished op and returns its ID.
func (r *Recorder) AddOp(op history.Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	op.ID = r.nextID
	r.ops = append(r.ops, op)
	return op.ID
}

// AddSession records a finished watch session.
func (r *Recorder) AddSession(s history.WatchSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions = append(r.sessions, s)
}

// AddFault records an injected fault.
func (r *Recorder) AddFault(f history.Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f)
}

// OpCount is the number of ops recorded so far.
func (r *Recorder) OpCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Faults returns a copy of the faults recorded so far.
func (r *Recorder) Faults() []history.Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]history.Fault(nil), r.faults...)
}

// Snapshot copies everything recorded into run.
func (r *Recorder) Snapshot(run *history.Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run.Ops = append([]history.Op(nil), r.ops...)
	run.Sessions = append([]history.WatchSession(nil), r.sessions...)
	run.Faults = append([]history.Fault(nil), r.faults...)
}
