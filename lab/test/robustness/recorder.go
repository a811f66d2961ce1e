package robustness

import (
	"sync"
	"time"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Recorder collects a run's history from many goroutines.
type Recorder struct {
	start time.Time

	// mu guards everything below.
	mu       sync.Mutex
	nextID   int
	ops      []record.Op
	sessions []record.WatchSession
	faults   []record.Fault
}

// NewRecorder starts the run's clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is nanoseconds since the start of the run (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// AddOp records a finished op and returns its ID.
func (r *Recorder) AddOp(op record.Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	op.ID = r.nextID
	r.ops = append(r.ops, op)
	return op.ID
}

// AddSession records a finished watch session.
func (r *Recorder) AddSession(s record.WatchSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions = append(r.sessions, s)
}

// AddFault records an injected fault.
func (r *Recorder) AddFault(f record.Fault) {
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
func (r *Recorder) Faults() []record.Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record.Fault(nil), r.faults...)
}

// Snapshot copies everything recorded into run.
func (r *Recorder) Snapshot(run *record.Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run.Ops = append([]record.Op(nil), r.ops...)
	run.Sessions = append([]record.WatchSession(nil), r.sessions...)
	run.Faults = append([]record.Fault(nil), r.faults...)
}
