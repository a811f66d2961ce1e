// Package linearizability checks that consistent reads served by
// freshcache are fresh, from a recorded history of concurrent operations
// (docs/design.md, "Correctness tests").
//
// A test records every write (key, revision, invoke and return positions)
// and every consistent read (what it observed, its snapshot revision,
// invoke and return positions) with positions taken from one monotonic
// counter: an operation whose Return is below another's Invoke finished
// before the other started, in real time. Check then verifies, directly
// from the history, that every read reflects every write acknowledged
// before the read started, that a read's snapshot is the state of etcd at
// its revision, and that nothing observed comes from nowhere. It never
// sleeps and never looks at wall-clock time.
//
// The end-to-end test (twocaches_test.go) drives two caches on different
// members of a 3-member embedded etcd with concurrent writers and LIST,
// GET and WATCH readers. check_test.go shows that Check reports
// hand-made stale reads, so a passing run means something.
// ownwrites_test.go runs the check on a cache that catches up on the
// ledger of own writes; its negative control (ownwrites_fault_test.go,
// built with the invariants tag) breaks the ledger on purpose
// (oracle.Ledger.Break) and requires Check to find violations.
package linearizability
