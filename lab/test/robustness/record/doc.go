// Package record holds what a robustness run records: the operations the
// clients ran with their results (porcupine's input), the watch sessions with every event they
// received, the faults injected, and etcd's own history of the key space
// (the ground truth every checker compares against).
//
// Everything is plain data, JSON-encodable for the failure report. Times are
// nanoseconds since the start of the run, from the monotonic clock.
//
// # Who calls it
//
// The robustness harness in lab/test/robustness records into it while a run is
// live and builds the Truth from etcd's history once the run has ended;
// package checker reads both; the failure report writes them out as JSON.
// Truth orders etcd's events by revision and indexes them by key, revision
// and value for the checkers; judging the run is the checkers' job.
//
// It is not the watch cache's event window (the library's internal/history):
// that is product state, this is a test's evidence.
package record
