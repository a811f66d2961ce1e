// Package storage is the storage-level benchmark behind `freshcache-bench
// storage` and `freshcache-bench memory`. It compares three storage
// backends for core/v1 pods, each built through the same
// generic.StorageDecorator and wrapped in the real kube-apiserver pod
// registry (k8s.io/kubernetes/pkg/registry/core/pod/storage), all in this
// process:
//
//   - etcd: generic.UndecoratedStorage, every read goes to etcd;
//   - upstream: genericregistry.StorageWithCacher(), k8s.io/apiserver's cacher;
//   - freshcache: watchcache.NewStorageDecorator, this project's cache.
//
// # How it is used
//
// StartEnv starts an embedded etcd (lab/pkg/etcdlocal) and loads a Shape into
// it (AttachEnv loads an etcd that is already running). Run then measures
// every backend of a Config on that Env, one after another, and returns a
// Row per backend, scenario, rv mode and concurrency; MeasureMemory
// records the heap each cache holds instead. A Report carries the rows to
// docs/results/ as JSON, markdown (WriteMarkdown, with the targets
// computed from the rows) and plots (Plot).
//
// The Env's data set and write load (Shape, Load, StartLoad, PutPod) are
// also what the apiserver benchmark sends through kube-apiserver.
//
// # Who calls it
//
// cmd/freshcache-bench (the storage, memory and plot subcommands; trace-wait
// reads the traces of Config.TraceDir through package diag/tracewait), the
// apiserver benchmark, and the tests in this package: the harness tests,
// and the side-by-side comparison of the two caches (compare_test.go: heap
// per object, rv=0 LIST by node, watch dispatch to 1,000 watchers; opt-in
// with FRESHCACHE_BENCH=1).
//
// # What it guarantees
//
//   - All backends of one run share one embedded etcd, one data set and
//     one background write load, so their ratios are comparable. Backends
//     are measured one after another: only the backend under test exists
//     while its rows run, so process CPU and allocations belong to it (plus
//     the embedded etcd server and the writers, which are the same for
//     every backend).
//   - Every number in a Row says how it was measured; docs/results/README.md
//     repeats that for readers.
//   - It never asserts on time. Correctness checks (item counts of LIST by
//     node, events delivered to watchers) are recorded in the Row, so a
//     test can check the harness without timing anything.
//   - It talks to loopback only.
package storage
