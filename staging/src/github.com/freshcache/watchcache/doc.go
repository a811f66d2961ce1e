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
//	  -> Cache (storage.Interface)             this package: plan the read
//	  -> freshness check                       waitFresh now; freshness/ + oracle/ next
//	  -> immutable snapshot                    store/ (btree clone), history/ (Exact, continue)
//
// Writes go straight to etcd, with the cached object as the suggestion. The
// reflector/ goroutine is the single writer of the in-memory state: it lists,
// then watches etcd on the cache's own gRPC stream, and publishes a new
// snapshot after every event. fanout/ delivers events to watchers.
//
// # What is served from where (until the freshness protocol lands)
//
//	LIST/GET rv=""              etcd (consistent read, delegated)
//	LIST/GET rv="0"             newest snapshot (LIST honours limit)
//	LIST/GET rv=N NotOlderThan  newest snapshot once the cache reached N
//	LIST rv=N Exact, continue   snapshot at N from history; etcd if N left
//	                            the window or etcd compacted it
//	WATCH                       see Cache.Watch
//	before the first list       GET and limited unfiltered LIST go to etcd,
//	                            the rest gets 429 (KEP-4568)
//
// # Caller duties
//
//  1. Call Stop (or the decorator's DestroyFunc) exactly when the resource's
//     storage is torn down; it ends every goroutine and watcher.
//  2. Do not mutate Options after passing them; gates are read once.
//  3. Treat objects handed out as your own: they are copies.
//
// # Locks
//
// Cache.mu (the state lock) serializes the reflector's writes with watch
// registration. It is taken before the fan-out's lock, which is taken before
// a watcher's queue lock. Readers of snapshots take no lock; waiters select
// on a channel closed at every revision change, on ctx.Done() and on a timer.
//
// The feature gates live in features/ and are registered on import.
package watchcache

// Importing features registers the gates on
// k8s.io/apiserver's DefaultMutableFeatureGate.
import _ "github.com/freshcache/watchcache/features"
