// Package servermetrics reduces what the servers under test report about
// themselves to the figures the benchmarks print: a watch cache's
// freshness histograms (which metric each implementation exports), etcd's
// request counters, and sums over the series of a metric family. The
// families come either from this process's registries (the storage
// benchmark, whose caches and etcd run in-process) or from a server's
// /metrics page, fetched by Scrape or by a Client that holds a
// kube-apiserver's admin credentials.
//
// # Who calls it
//
// The storage, apiserver and cluster benchmarks. (The stall and watchlist
// scenarios read their own figures with package promtext.)
//
// # What it guarantees
//
//   - A family that is absent reads as nil (histograms) or zero
//     (counters), never as an error: an implementation that does not
//     export a metric simply has no figure.
//   - EtcdCounters counts only what the server under test caused: the
//     benchmarks' own writes (Put) are kept apart from Requests.
//   - Client and Scrape only GET, and fail on any status but 200.
package servermetrics
