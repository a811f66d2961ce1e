// Package watchcache is freshcache: a watch cache for k8s.io/apiserver that
// serves consistent reads. Every LIST, GET and WATCH it answers from memory is
// at least as fresh as the moment the request arrived.
//
// # Who calls it
//
// A server built on k8s.io/apiserver installs the cache with one line, a
// generic.StorageDecorator (NewStorageDecorator), wherever it would have used
// upstream's genericregistry.StorageWithCacher(). The kube-apiserver in this
// repository does that through its --watch-cache-implementation flag. Tests
// and embedders that already hold an etcd3 storage.Interface call New.
//
// # How a read flows
//
//	apiserver handler
//	  -> Cache (storage.Interface)             this package; internal/plan decides
//	                                           where the read is served from
//	  -> freshness wait (internal/freshread)   internal/driver runs a freshness.Machine;
//	                                           oracle/ fetches revisions
//	  -> immutable snapshot                    internal/store (btree clone),
//	                                           internal/history (Exact, continue)
//
// Writes go straight to etcd, with the cached object as the suggestion. The
// internal/reflector goroutine is the single writer of the in-memory state: it lists,
// then watches etcd on the cache's own gRPC stream, and publishes a new
// snapshot after every etcd revision it has whole (all keys of a
// transaction). The one other publisher is the catch-up on the ledger of
// own writes (ledger.go, Options.ProgressFromOwnWrites), which moves the
// unchanged state to a later revision under Cache.mu, as a progress
// notification would. internal/fanout delivers events to watchers.
//
// # Consistent reads (docs/design.md, "The protocol")
//
// A consistent read registers with the cache's freshness.Machine through
// the driver (internal/driver), which carries out the Machine's caller duties:
// it issues a linearizable revision fetch R after the read arrived, shared
// through one oracle.Oracle per etcd cluster; reports every applied event
// and progress notification as the cache revision c; sends a progress
// request on the cache's watch stream at once when a read waits (and again
// while reads wait, never on a tick); and arms one timer for deadlines.
// The reader selects on its own channel and ctx.Done(). Once released
// (c >= R) it serves from a snapshot taken after the release, whose RV is
// >= R. On timeout: TimeoutFallback delegates a LIST or GET with rv="" (a
// quorum read), TimeoutReject answers 429 with Retry-After; a failed fetch
// does the same. A WATCH is never opened on etcd: with TimeoutFallback it
// waits as upstream's does, for the revision as long as its context lasts
// (through fetches that go unanswered) and then the timeout for the cache,
// and gets upstream's error (TooLargeResourceVersion with Retry-After
// after that timeout, the fetch's error after a failed fetch); with
// TimeoutReject the whole wait is bounded and ends in 429. Stale data is
// never served.
//
// # What is served from where
//
//	LIST rv=""                  freshness wait, newest snapshot (upstream's
//	                            consistent list, with coalesced fetches)
//	GET rv=""                   gate ConsistentReadsFromCache on: as LIST;
//	                            off: etcd
//	LIST/GET/WATCH rv="0"       gate FreshResourceVersionZero on: as rv=""
//	                            but within ZeroReadStaleness (a revision a
//	                            request sent that recently was answered
//	                            with, when there is one); off: newest
//	                            snapshot as it is
//	WATCH rv=""                 gate on: starts from a snapshot after the
//	                            freshness wait; off: from the current state
//	LIST/GET rv=N NotOlderThan  newest snapshot once the cache reached N
//	                            (same machinery; "too large RV" on timeout)
//	LIST rv=N Exact, continue   snapshot at N from history; etcd if N left
//	                            the window, etcd compacted it, or upstream's
//	                            ListFromCacheSnapshot gate is off
//	consistent continue (RV<0)  as rv="", continuing from the token's key
//	while not ready             GET and limited unfiltered LIST go to etcd,
//	(first list, relist)        the rest gets 429 with a Retry-After that
//	                            grows with the downtime (KEP-4568, ready.go)
//	etcd too old (versionguard) consistent LIST/GET go to etcd; WATCH
//	                            starts from the current state (upstream);
//	                            no wait rests on a progress notification
//	                            (waits end by events; not-yet-fresh Exact
//	                            reads go to etcd)
//
// # Inconsistency detection
//
// Under the gate CacheInconsistencyDetection (Beta, on), every few minutes
// (Options.InconsistencyCheckPeriod) a goroutine of the cache compares a
// snapshot at revision R with one paginated list of etcd at exactly R
// (internal/consistency). On a mismatch it logs the resource, R and both
// digests, counts apiserver_freshcache_inconsistencies_total, and has the
// reflector relist (reason "inconsistent"), which purges the state.
//
// # Caller duties
//
//  1. Call Stop (or the decorator's DestroyFunc) exactly when the resource's
//     storage is torn down; it ends every goroutine and watcher.
//  2. Do not mutate Options after passing them; gates are read once.
//  3. Treat nested data of objects handed out as read-only, as with
//     upstream's cacher. LIST items and GET results are shallow copies:
//     their maps, slices and pointers are the cache's. Watch events carry a
//     fanout.Shared, which copies on write; call its GetObject for a private
//     copy.
//
// # Locks
//
// Lock order, outermost first:
//
//  1. Cache.mu (the state lock) serializes the reflector's writes with
//     watch registration;
//  2. the fan-out's lock;
//  3. a watcher's queue lock.
//
// The inconsistency detector takes Cache.mu once per round, to read the
// snapshot, the readiness and the list count together; it lists etcd and
// compares without any lock.
//
// driver.mu (the freshness Machine) is a leaf: it is never held while
// another lock is taken, and the reflector reports to it after releasing
// Cache.mu. oracle.Registry.mu is taken before oracle.Oracle.mu, and
// neither is held while the cache's locks are. oracle.Ledger's lock is a
// leaf, and the catch-up on it waits holding none. Readers of snapshots take no
// lock; waiters select on a channel of their own, ctx.Done() and the
// cache's stop channel.
//
// The feature gates live in features/ and are registered on import.
package watchcache

// Importing features registers the gates on
// k8s.io/apiserver's DefaultMutableFeatureGate.
import _ "github.com/freshcache/watchcache/features"
