// Package bench measures freshcache side by side with upstream's cacher
// (k8s.io/apiserver/pkg/storage/cacher) over the same embedded etcd and the
// same pods. It holds no production code; everything lives in its tests.
//
// What it measures, for each cache built in isolation over one etcd:
//
//   - heap per cached object: runtime.GC, then the HeapAlloc delta between
//     before the cache was built and after it is ready, divided by the
//     number of pods;
//   - rv=0 LIST by spec.nodeName: requests per second at several
//     concurrencies, through the spec.nodeName index of both caches;
//   - watch dispatch: events per second delivered to 1,000 watchers, end to
//     end from the first etcd write until every watcher has received every
//     event it should, with and without encoding each event as the
//     apiserver's watch handler does.
//
// A plain `go test ./...` runs only TestHarnessAgrees, a small check that
// both caches build over one etcd and answer LIST by node alike. The full
// comparison is opt-in, because it takes minutes and its numbers only mean
// something on a quiet machine:
//
//	FRESHCACHE_BENCH=1 go test ./test/bench -run TestCompare -v -timeout 60m
//
// FRESHCACHE_BENCH_PODS, _NODES, _REPEATS and _LIST_SECONDS change the
// shape (defaults 20000, 200, 3, 3). The test prints a Markdown table of
// medians. Benchmarks (go test -bench . ./test/bench) run the same
// measurements through testing.B for profiling.
//
// Tests here never assert on timings.
package bench
