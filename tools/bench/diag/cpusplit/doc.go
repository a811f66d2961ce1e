// Package cpusplit splits the samples of a Go CPU profile into the parts
// of a consistent read's cost, so that a benchmark row can say where its
// CPU per op went and not only how much there was.
//
// A sample goes to the first part whose rule matches a function on its
// stack (see Parts for the order). The parts follow the goroutines of a
// freshcache-bench storage process: the client loops (the op itself, and
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
// # Who calls it
//
// tools/bench/storage profiles the measured part of each row when
// Config.CPUProfileDir is set (freshcache-bench storage --cpuprofile-dir)
// and stores the split in Row.CPUSplitUsPerOp; the report prints it as a table.
package cpusplit
