// Package watchcache is freshcache: a watch cache for k8s.io/apiserver that
// serves consistent reads. Every LIST, GET and WATCH it answers from memory is
// at least as fresh as the moment the request arrived.
//
// # Who calls it
//
// A server built on k8s.io/apiserver installs the cache with one line, a
// generic.StorageDecorator, wherever it would have used upstream's
// genericregistry.StorageWithCacher(). The kube-apiserver in this repository
// does that through its --watch-cache-implementation flag.
//
// # How a read flows
//
//	apiserver handler
//	  -> Cache (storage.Interface)             this package
//	  -> freshness check                       freshness/ (pure), oracle/ (etcd)
//	  -> immutable snapshot                    store/ (btree clone), history/
//
// Writes go straight to etcd. The reflector/ goroutine is the single writer
// of the in-memory state: it lists, then watches etcd, and publishes a new
// snapshot after every event. fanout/ delivers events to watchers.
//
// The feature gates live in features/ and are registered on import.
package watchcache
