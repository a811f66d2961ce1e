// Package plan decides how the cache answers one read. It is the only place
// that classifies a request's resourceVersion: For turns the request (verb,
// resourceVersion, match, limit, continue token, sendInitialEvents), the
// cache's gates and its state (ready, etcd version guard, revision,
// compaction) into a Plan, and the cache carries the plan out.
//
// # Who calls it
//
// The Cache's GetList, Get and Watch, once per request, after they parsed
// the request (bad input is theirs to reject). Nothing here does I/O, reads
// a clock or takes a lock.
//
// # How it stays upstream's
//
// The branch structure of the API's resourceVersion table for LIST (which
// combinations mean "exact", "continue", "consistent" or "any/not older
// than") is not written again here: For asks upstream's own
// delegator.ShouldDelegateList (k8s.io/apiserver/pkg/storage/cacher/
// delegator), with a Helper that records which branch it took. If a later
// Kubernetes changes that table, the plans follow. What freshcache adds is
// what each branch is served from: the freshness wait for rv="" and, under
// FreshResourceVersionZero, rv=0; history snapshots for Exact reads.
//
// # Guarantees
//
//   - A plan that serves from memory without a wait (Snapshot) is only
//     chosen for reads whose semantics allow any state: rv=0 with
//     FreshResourceVersionZero off.
//   - A consistent read (LIST rv="" always, as upstream's GA consistent
//     list; GET and WATCH rv="" with ConsistentReadsFromCache; rv=0 with
//     FreshResourceVersionZero) is Fresh, or Etcd when the guard tripped.
//   - Plan.Requested, the metrics label, is derived from the plan; no
//     caller decides anything from it.
//
// # After the wait
//
// A Fresh or NotOlder plan sends the read to the freshness wait. How the
// wait ended (released, fetch failed, timed out) and the read's Wait
// (verb, consistent or bounded rv=0, TimeoutReject) decide what it gets:
// Wait.After, a pure table (serve from the cache, fall back to etcd, 429,
// too large resource version, the fetch's error, or wait another timeout
// for an rv=0 LIST whose cache was catching up), and Wait.Patient, whether
// a WATCH waits for its revision as long as its context lasts.
// internal/freshread's Reader.Wait is the I/O around that one decision.
package plan
