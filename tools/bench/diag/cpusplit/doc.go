// Package cpusplit splits the samples of a Go CPU profile into the parts
// of a consistent read's cost, so that a benchmark row can say where its
// CPU per op went and not only how much there was.
//
// A sample that carries freshcache's pprof label (metrics.ProfileLabel)
// goes to the part of its label; any other to the first part whose rule
// matches a function on its stack (see RuleSet.Parts for the order). The
// rules depend on the process, so there are two rule sets.
//
// Storage's parts follow the goroutines of a freshcache-bench storage
// process: the client loops (the op itself, and
// the freshness wait inside it), the goroutines that send revision
// fetches and progress requests, the gRPC client transport, the embedded
// etcd server with its gRPC side, the garbage collector's background
// workers, the caches' own goroutines, the harness's background writes
// and bookkeeping, and the runtime.
//
// The etcd server part is what would leave the apiserver's cores in a
// deployment where etcd runs elsewhere; the consistent-read target
// benchmark (make bench-targets) runs it in the same process, so there it
// is part of the price.
//
// APIServer's parts follow a kube-apiserver's work, upstream's or
// freshcache's: the freshness wait and the revision fetches and progress
// requests (freshcache's labels, and upstream's functions for the same
// work, so that the configurations compare), freshcache's cache
// goroutines, encoding, the etcd client, the watch cache's unlabelled
// work, the rest of the request handling, the apiserver's own
// controllers, the HTTP connections, the garbage collector's workers and
// the benchmark's own scrapes and profile.
//
// # Who calls it
//
// tools/bench/storage profiles the measured part of each row when
// Config.CPUProfileDir is set (freshcache-bench storage --cpuprofile-dir)
// and stores the split in Row.CPUSplitUsPerOp; the report prints it as a
// table. tools/bench/cluster profiles every kube-apiserver over the
// measured window of each cell when Config.CPUProfile is set
// (freshcache-bench cluster and scale --apiserver-cpuprofile, on by
// default) and stores the APIServer split in Row.APICPUParts.
package cpusplit
