// Package robustness runs Kubernetes-shaped traffic through two watch
// caches ("apiservers") pinned to different members of a 3-member embedded
// etcd, injects faults (member kill and restart, isolation of a cache's
// member, leader change, compaction while watching, cancelled watch
// streams, a slow watcher, cache restarts, delay and drop on peer links),
// and checks the recorded history with package checker against etcd's own
// history of the key space. Besides the writes through the caches, which
// change one key per revision, clients write to etcd directly: 2-4 pods
// in one transaction, and 2-4 pods on a short lease that etcd deletes at
// one revision when it expires (txn.go, lease.go).
//
// It runs against any generic.StorageDecorator: upstream's cacher
// (genericregistry.StorageWithCacher) is the negative control, freshcache
// (watchcache.NewStorageDecorator) the system under test. The same run also
// drives two real kube-apiserver processes over HTTPS with client-go.
//
// Layout:
//
//	cluster.go   etcd members, peer and client proxies, member faults
//	api.go       what clients need of an "apiserver"
//	cache.go     API: the pod registry store built by a decorator, in process
//	apiserver.go API: a kube-apiserver child process, over HTTPS
//	recorder.go  the history, recorded from many goroutines
//	traffic.go   clients: writes, reads in every resourceVersion mode
//	txn.go       clients writing to etcd directly: multi-key transactions
//	lease.go     clients' leases, whose expiry deletes several keys at once
//	watcher.go   watchers that resume from the last RV, relist on 410
//	truth.go     a direct etcd watch: the ground truth
//	faults.go    the fault schedule
//	watchdog.go  bounds every step, so that a hung run fails fast, by name
//	run.go       one run: wiring, stop, check, report
//	report.go    the failure report directory and the summary
//
// The fault-heal scenario (TestFaultHeal, make test-fault-heal) is apart
// from the checked histories: writes through the apiserver on member 0,
// reads through the one on member 1, member 1 cut off and healed, and
// every read's status counted as the server sent it:
//
//	heal.go         one run: cluster, apiservers, the isolation schedule
//	heal_traffic.go the writer and the raw-HTTP readers
//	heal_tally.go   stale, 429, late 429, 5xx and errors per read kind
//	heal_report.go  the markdown report and the summary lines
package robustness
