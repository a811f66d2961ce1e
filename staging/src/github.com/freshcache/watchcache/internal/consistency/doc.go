// Package consistency is freshcache's inconsistency detector: it checks,
// every few minutes, that a cache holds exactly the objects etcd held at
// the cache's revision, so that a divergence (a lost or misapplied event, a
// bug of ours or of etcd's watch) is found and repaired instead of being
// served until the next restart. It is the counterpart of upstream's
// k8s.io/apiserver/pkg/storage/cacher/consistency (gate
// DetectCacheInconsistency), behind freshcache's own gate
// CacheInconsistencyDetection (Beta, on by default).
//
// # Who calls it
//
// The watchcache package builds one Checker per cached resource when the
// gate is on (detector.go) and runs it on a goroutine of its own, which
// stops with the cache. The Checker needs two things from the cache: a
// Target (an immutable snapshot at a revision the cache has completely
// applied) and a Report callback. The cache's callback counts the round
// (apiserver_freshcache_consistency_checks_total{result}, and
// apiserver_freshcache_inconsistencies_total on a mismatch), logs it, and
// on a mismatch asks the reflector to relist (reason "inconsistent"): the
// cache goes pending, its watchers are closed, and a fresh list replaces
// the state.
//
// # What a round does
//
//  1. Take the Target. A cache that is not ready (it is relisting) skips
//     the round. A snapshot's revision R is complete: events are applied a
//     whole etcd transaction at a time, and a progress notification at R
//     proves every event up to R was delivered. Under untrusted progress
//     (an etcd the version guard rejected) events come one at a time, so
//     the cache compares the state before its newest event's revision.
//  2. List the resource from etcd at exactly R: a paginated GetList on the
//     etcd3 store with ResourceVersion=R, ResourceVersionMatch=Exact and
//     Limit=PageSize, then the continue tokens, which carry R. If etcd has
//     compacted R meanwhile (410), the round is skipped: that says nothing
//     about the cache.
//  3. Compare as the pages arrive. The snapshot is immutable, so the
//     Comparison walks it in lock-step with etcd's items, both in key
//     order: it holds no copy of either side (upstream copies every cached
//     item's name and version into a slice first), and it finds the first
//     differing key exactly rather than inferring a difference from hashes.
//     Each side is also summarised as a Digest (count, and FNV-64a over
//     the length-prefixed key and the 8-byte revision of every item), which
//     the log line shows.
//
// What is compared is (key, resourceVersion) for every object, as upstream
// does: a different version of an object, a missing or an extra key all
// show. Content is not hashed; a version that matches implies the content
// etcd stored at that version.
//
// # Cost
//
// One round is one paginated range of the resource per period (default 5
// minutes, stretched by up to half at random, counted from the end of the
// previous round): ceil(n/PageSize) GetList calls, at least one. Rounds of
// one cache never overlap, and none runs on a request path. The etcd3
// store decodes (and decrypts) every object it returns, because
// storage.Interface has no keys-only list; the checker keeps only each
// object's key and revision, page by page, so its memory is one page of
// decoded objects plus the pinned snapshot (which shares its nodes with
// the live state until the writer copies them). etcd itself reads the
// revision from its MVCC history, which the compaction period (5 minutes
// by default) keeps available for the round.
//
// # Guarantees
//
//   - A Mismatch means the cache's state at R differed from etcd's at R;
//     there are no false positives from timing (both sides are at exactly
//     R) or from compaction (skipped).
//   - One round in flight per Checker; Run returns once stop is closed
//     and the round in flight, if any, has returned (its context is
//     cancelled). A cancelled round is not reported.
//   - The Checker reads no global state: the period, page size and clock
//     come from Config, resolved once by the cache.
package consistency
