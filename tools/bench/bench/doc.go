// Package bench is the side-by-side benchmark harness behind
// cmd/freshcache-bench. It compares three storage backends for core/v1 pods,
// each built through the same generic.StorageDecorator and wrapped in the
// real kube-apiserver pod registry (k8s.io/kubernetes/pkg/registry/core/pod/storage):
//
//   - etcd: generic.UndecoratedStorage, every read goes to etcd;
//   - upstream: genericregistry.StorageWithCacher(), k8s.io/apiserver's cacher;
//   - freshcache: watchcache.NewStorageDecorator, this project's cache.
//
// # Who calls it
//
// cmd/freshcache-bench (subcommands storage, memory, apiserver, plot, etcd;
// trace-wait reads its traces through the subpackage tracewait) and the
// tests in this package: the harness tests, and the side-by-side
// comparison of the two caches (compare_test.go: heap per object, rv=0
// LIST by node, watch dispatch to 1,000 watchers; opt-in with
// FRESHCACHE_BENCH=1). Nothing else.
//
// # What it guarantees
//
//   - All backends of one run share one embedded etcd (pkg/etcdlocal), one
//     data set and one background write load, so their ratios are
//     comparable. Backends are measured one after another: only the backend
//     under test exists while its rows run, so process CPU and allocations
//     belong to it (plus the embedded etcd server and the writers, which are
//     the same for every backend).
//   - Every number in a Row says how it was measured; docs/results/README.md
//     repeats that for readers.
//   - It never asserts on time. Correctness checks (item counts of LIST by
//     node, events delivered to watchers) are recorded in the Row, so a
//     test can check the harness without timing anything.
//   - It talks to loopback only.
package bench
