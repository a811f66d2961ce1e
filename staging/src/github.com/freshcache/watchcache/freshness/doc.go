// Package freshness is the consistent-read protocol of one watch cache, as a
// pure state machine.
//
// A Machine starts no goroutine, does no I/O, reads no clock and holds no
// lock. Inputs are method calls ("a read arrived", "a fetch answered R", "an
// event was applied at rv", "it is now t"). Its output is an Output that says what
// to do next: issue a revision fetch, send a progress request, release these
// reads, fail those, time out those. A thin driver in the cache package owns
// the goroutines, the etcd calls (through the oracle package) and the timer.
// This is the shape of go.etcd.io/raft's RawNode.
//
// # The protocol
//
// The cache revision c is the highest revision r such that the cache has
// applied every event of its resource with revision <= r. It only grows.
//
// A Consistent read needs a revision R from a linearizable fetch that was
// issued after the read arrived. At most one fetch is in flight. A read that
// arrives while a fetch is in flight waits for the next fetch: the one in
// flight may have been issued before the read arrived, so its answer may
// miss a write that completed before the read. Every read waiting when a
// fetch is issued shares that fetch's answer. When R arrives, a read with
// c >= R is released at once (the fast path); the others wait for c >= R.
//
// A NotOlderThan read (resourceVersion=N, NotOlderThan) knows its target N
// at arrival and waits for c >= N the same way.
//
// A patient Consistent read (Read.CatchUp) is how upstream's cacher waits
// for a watch: it waits for its revision for as long as its client stays,
// through fetches that end unanswered (FetchUnanswered: the caller's time
// limit for a fetch ran out, as on a member cut off from its leader), and
// only then gets CatchUp for c to reach R. Other reads have one deadline,
// from arrival, over both stages.
//
// While any read waits for c, the Machine asks for a progress request on the
// cache's watch stream at once, keeps at most one in flight, and asks for
// another as soon as the previous one is answered and reads still wait.
// There is no fixed tick.
//
// # Guarantees
//
//  1. A Consistent read is released with Target = R only if R is the answer
//     of a fetch issued (FetchIssued called) after the read arrived
//     (ReadArrived called). Release.Fetch names that fetch.
//  2. No read is released before c >= its target; Release.RV is c at the
//     release, and RV >= Target.
//  3. The Machine never asks for a second fetch while one is in flight, nor
//     for a second progress request while one is in flight.
//  4. Every read is resolved at most once: released, failed, timed out, or
//     cancelled. A read whose covering fetch failed is failed, never served;
//     so is one whose fetch ended unanswered, unless it is patient: it
//     waits for the next fetch, which is issued after it arrived too.
//  5. No read waits for a target c has reached: releases happen within the
//     input that advances c or delivers R.
//  6. Liveness: if the caller carries out every request in every Output, every
//     fetch is eventually answered or failed (an unanswered one resolves
//     only the reads that are not patient), and progress requests are
//     eventually answered with a revision >= the etcd revision at the time
//     they were sent, then every read is eventually resolved.
//  7. A patient read has no deadline until its revision is known, and then
//     exactly the answer's time plus its CatchUp.
//
// # The caller's duties
//
// Whoever drives a Machine must:
//
//  1. Serialize all calls to it: one goroutine, or one mutex held around
//     every call (including Output). The Machine does no locking.
//
//  2. After every input, or batch of inputs, call Output (or check HasOutput)
//     and carry out all of it, in any order:
//
//     a. For each Release, serve the read from a snapshot taken after the
//     release; such a snapshot has an RV >= Release.RV >= Target.
//
//     b. For each Failure and Timeout, do not serve the read from the cache:
//     delegate it to etcd or reject it (429), per configuration. The error
//     in a Failure wraps ErrFetchFailed and the fetch's cause.
//
//     c. If IssueFetch is set, call FetchIssued, and only then start the
//     linearizable revision fetch (oracle.Revision). Calling FetchIssued
//     first is what makes "issued after arrival" true: every read it covers
//     arrived before the call, hence before the request. Report its outcome
//     with exactly one of FetchAnswered(R, now), FetchFailed(err) (etcd
//     answered with an error) or FetchUnanswered(err) (no answer within
//     the caller's time limit for a fetch, which must be at least a round
//     trip: patient reads go straight on to the next fetch).
//
//     d. If SendProgress is set, call ProgressRequestSent(now), then send
//     RequestProgress on the cache's own watch stream. Call
//     ProgressAnswered when the progress notification arrives. A request
//     that stays unanswered for Options.ProgressStall while something
//     needs it (the stream broke, etcd was unreachable) is declared lost
//     by Tick, and the next Output asks for another: the retry is the
//     Machine's, the caller only keeps Tick coming (duty 4).
//
//  3. Call EventApplied(rv) once every event at rv (all keys of its etcd
//     transaction), and every earlier event of the resource, is in the
//     state that snapshots are taken from. Call RevisionPending(rv) when
//     events of rv have arrived but nothing proves them all there yet. Call
//     ProgressNotified(rv) for a progress notification at rv (the watch has
//     delivered every event up to rv). Report the initial list's revision
//     the same way, or pass it as Options.Revision. After a re-list, report
//     the new list's revision; c never goes backward.
//
//  4. Give each read its deadline in Read.Deadline (a patient read its
//     CatchUp instead: the Machine derives its deadline from the time
//     passed to FetchAnswered), and call Tick(now) when
//     the earliest deadline (NextDeadline: reads' deadlines and a needed
//     progress request's stall time) has passed. One timer suffices.
//     The Machine never reads the clock; "now" is whatever Tick was told.
//
//  5. Call ReadCancelled when a client gives up before its read resolved.
//     A false result means the read was resolved already, maybe in an Output
//     not yet processed; handle that resolution as usual.
//
//  6. Use ReadIDs that are unique among unresolved reads.
//
// # Why there is no Advance
//
// raft's Ready is acknowledged with Advance because raft must know when its
// output was persisted. Here the two requests are acknowledged by the inputs
// that say they happened (FetchIssued, ProgressRequestSent): the flags stay
// set in every Output until then. The resolutions are handed over by Output
// itself and never returned twice. One call fewer, one duty fewer.
//
// # Invariants
//
// Build with -tags invariants to check the Machine's internal consistency
// after every input (O(reads) each; tests only).
package freshness
