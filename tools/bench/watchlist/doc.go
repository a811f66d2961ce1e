// Package watchlist is the "WatchList over a huge resource" benchmark
// scenario (upstream issue kubernetes#138728): while WatchList clients
// stream every object of a resource with hundreds of thousands of
// objects, do fresh reads (rv="") of that resource and of another one
// stay fast, and does their throughput fall by no more than the CPU the
// WatchLists take?
//
// # Who calls it
//
// cmd/freshcache-bench's watchlist subcommand (make bench-watchlist) and
// this package's tests. The exported surface is Config (DefaultConfig,
// ShortConfig, Validate), Run, and the report: WriteMarkdown, RatiosLine,
// Result.WriteJSON, and Derive/ComputeRatios for the figures the targets
// are judged by.
//
// # What Run does
//
// For each configuration (upstream's cacher, freshcache, freshcache with
// FreshResourceVersionZero), one after the other, each on a fresh local-up
// cluster started through lab/pkg/localup/launch (one kube-apiserver, embedded
// etcd, no controllers, no nodes):
//
//  1. Writes the data set straight to etcd in kube-apiserver's storage
//     encoding (data.go) and waits until LISTs at rv=0 of every namespace,
//     served from the cache, count every object.
//  2. Starts background writers (WriteRate updates/s to each resource) that
//     run through every phase, so that the caches have to move.
//  3. Runs the phases: writes only (the apiserver's idle CPU), a warm-up,
//     A (fresh reads), B (fresh reads and WatchLists), C (WatchLists only:
//     the apiserver's CPU per watch event). Around each it samples CPU of
//     the apiserver, etcd, this process and the machine from /proc, and
//     the freshness-wait histograms from /metrics.
//
// # What it guarantees
//
//   - Every client has its own TCP connection (reads.go, ownConnection), so
//     the WatchLists' bytes never queue the reads inside this process.
//   - The WatchList clients parse only the frame and event type of the
//     protobuf watch stream (stream.go) and decode only bookmarks and
//     errors: they take as little of the shared cores as they can.
//   - It asserts nothing about time: numbers go into the Result, and the
//     targets are judged in the report. Wrong answers (a LIST with the
//     wrong count, a GET of the wrong object) count as read errors.
//   - Nothing it starts outlives Run: local-up is stopped (SIGINT, then a
//     kill after its grace period) at the end of every configuration.
package watchlist
