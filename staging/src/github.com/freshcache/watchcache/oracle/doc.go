// Package oracle fetches fresh etcd revisions for consistent reads, coalesced
// across every cache that shares an etcd client.
//
// # What it guarantees
//
// Oracle.Revision returns a revision R from a fetch that was issued after
// the call began. The fetch is a linearizable range over one key with
// count only (no data comes back), so etcd confirms through the leader
// (ReadIndex) that the answering member has applied every committed write.
// Hence every write that completed before Revision was called has a
// revision <= R. A cache whose revision c reaches R can serve the read.
//
// At most one fetch is in flight per Oracle. A call that arrives while a
// fetch is in flight waits for the next one: the one in flight may have
// been issued before the call and may miss a write that completed just
// before it. Every call waiting when a fetch is issued shares its answer.
// Under load etcd sees about one request per round trip, not one per read.
//
// A failed fetch fails every call it covered with an error wrapping
// ErrFetchFailed (and the cause); the caller delegates the read to etcd or
// rejects it, and never serves it from the cache. A fetch that got no answer
// within FetchTimeout (a member cut off from its leader holds the read
// until then) also wraps ErrFetchTimedOut: a caller that may wait longer,
// as a watch does, asks again. A call whose ctx ends
// returns at once with an error wrapping ctx.Err(). Waiting is a select on
// the round's channel and ctx.Done(): no goroutine per caller, no sleeping.
// If every caller of the fetch in flight gives up, the fetch is aborted.
//
// # Revisions from writes
//
// A write that this process sends to the same etcd cluster after a caller
// arrived is as good as a fetch: etcd numbers writes in commit order, so it
// is committed after every write that completed before the caller arrived.
// The cache announces each write just before it is sent (WriteStarting),
// which closes the round new callers join, and ends it with the revision
// etcd committed it at (Write.Succeeded) or without (Write.Failed). A
// successful write answers every round open when it started, a round in
// the fetch in flight included. When a fetch ends and every open round is
// covered by a write in flight, the next fetch waits for those writes, at
// most Options.WriteWait (default: the mean fetch round trip); a new caller
// never waits for one, because no write sent before it arrived covers it.
//
// # Holding a read for the next write
//
// A write only covers the callers that arrived before it started, so a
// caller that finds the Oracle idle would fetch at once and leave the
// writes no chance. When this process writes often, that caller's round
// is held instead (Options.WriteHold; hold.go, hold_test.go): its fetch waits
// for twice the mean gap between recent writes, which at Poisson arrivals
// finds a write about 86% of the time. A write that starts in the hold
// covers the round, which then waits for it as above; a hold that ends
// without one sends the fetch. The hold is taken only when it fits in the
// bound (DefaultWriteHold) and writes have not stopped, and never for a
// caller that arrives while a fetch is in flight: a process whose reads
// keep a fetch in flight shares fetches already, and holding would only
// slow it.
//
// # Bounded reads
//
// Every answered request also says something about the past: a fetch sent
// at time s and answered with R, or a write of this process sent at s and
// committed at R, shows that every write that completed before s has a
// revision <= R. RecentRevision(maxAge) hands out such an R for a request
// sent at most maxAge before the call, from the last answers the Oracle
// keeps (recent.go), the lowest if several qualify, and never sends
// anything. A read served at a cache revision >= R reflects every write
// acknowledged more than maxAge before it arrived: the guarantee of
// resourceVersion=0 under FreshResourceVersionZero
// (watchcache.Options.ZeroReadStaleness). However many such reads arrive,
// they cost at most one fetch per maxAge, and none while this process
// writes. A member cut off from its leader answers no fetch and commits
// no write, so maxAge after the cut no recent revision is left, and the
// reads wait for a fetch that fails.
//
// # The ledger of own writes
//
// Oracle.Ledger records the revision and the key of every write this
// process makes to the cluster through a cache (ledger.go). The etcd3 store
// writes one key per transaction, so a cache at revision c that needs R is
// at R already when every revision in (c, R] is one of those writes, of a
// key outside the cache's prefix: the cache advances without a progress
// request (unless the cache's Options.ProgressFromOwnWrites is off). A
// revision the ledger lacks (another apiserver's write, a lease expiry,
// the compactor) proves nothing, and the cache asks etcd as before. Builds with the invariants
// tag can break a Ledger on purpose (Ledger.Break), for the negative
// controls of the history checks.
//
// # Why linearizable
//
// A serializable range is answered by the member from its own state. A
// member cut off from the majority keeps answering with its last revision,
// and the cache watching that member is exactly as stale, so it looks fresh
// against that revision and serves stale data: kubernetes#59848. The
// linearizable range fails or times out on such a member instead.
// TestPartitionedMember shows both side by side on a 3-member embedded
// cluster whose peer traffic runs through proxies the test controls.
// Options.UnsafeSerializable exists only for that contrast.
//
// # Who calls it
//
// The watchcache package, from the driver of each resource's
// freshness.Machine: when an Output asks for a fetch, the driver calls
// Machine.FetchIssued and then Revision, and reports the outcome with
// FetchAnswered or FetchFailed. Because FetchIssued precedes the call and the
// Oracle only answers with fetches issued after the call, the Machine's
// "issued after arrival" rule holds end to end.
//
// Sharing: the revision is cluster-wide, so all resources should use one
// Oracle per etcd cluster. k8s.io/apiserver dials one client per resource,
// so Registry.Acquire keys Oracles by a string (EndpointsKey) and owns the
// client it dials; Registry.ForClient shares by client pointer. Shared is a
// process-wide Registry.
//
// # Why not reuse freshness.Machine
//
// The Machine's coalescing is one part of a bigger protocol: it also tracks
// the cache revision, waiters, progress requests and deadlines, and its
// caller must serialize every call. The Oracle needs only "one fetch in
// flight, the callers that arrived meanwhile form the next round", shared by
// many caches, each with its own Machine, plus the writes that may answer
// a round first. That is one mutex, a short list of open rounds and a
// channel per round (rounds.go), small enough to check by eye, and the randomized tests of both packages cover the same rule from
// each side. Driving a Machine here would add an Output loop and per-read IDs
// for nothing.
//
// # Concurrency
//
// Oracle.mu guards the open rounds, the round callers join, the fetch in
// flight, the writes in flight and the wait for them. A round's rev and
// err are written before its done channel is closed and read only after. One goroutine runs per fetch, never per caller; Close
// waits for it. Registry.mu guards the entries and is taken before
// Oracle.mu (Acquire/release may create or close an Oracle), never after.
//
// # Metrics
//
// Options.Recorder receives one FetchDone per fetch with the number of
// calls it answered and the fetch's round trip. metrics.OracleRecorder
// turns that into apiserver_freshcache_revision_fetches_total,
// apiserver_freshcache_reads_per_revision_fetch and
// apiserver_freshcache_revision_fetch_duration_seconds, and one
// WriteAnswered per write that answered reads, into
// apiserver_freshcache_reads_answered_by_writes_total. These carry no
// group and resource labels: a fetch serves every resource at once.
package oracle
