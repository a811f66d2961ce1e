// Package ready is whether a cache's state is current: upstream's cacher
// readiness (ready.go) as clients see it. A State is ready from the end of
// a list until the reflector has to list again (a compaction, a failed
// apply, transient errors past their budget) or the inconsistency detector
// finds the state differs from etcd's, then pending until the next list is
// in.
//
// # Who calls it
//
// The root package's Cache holds one State. Its sink sets it ready when a
// list is in and pending (with the cause) when the reflector relists; the
// detector sets it pending on a mismatch. Readers ask IsReady (internal/plan
// takes it into the plan), refuse with Refusal, and Cache.Wait blocks in
// Wait.
//
// # What it guarantees
//
// While pending, Refusal is a 429 whose Retry-After grows with the
// downtime, 1 s to 30 s, as upstream's; clients back off while etcd is in
// trouble and return quickly after a short relist. Wait selects on a
// channel that the move to ready closes, on ctx.Done() and on the cache's
// stop channel; it never sleeps. State is safe for concurrent use and its
// lock is a leaf: nothing is called while it is held.
package ready
