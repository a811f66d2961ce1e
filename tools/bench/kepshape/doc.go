// Package kepshape is `freshcache-bench kep-2340` (make bench-kep-2340):
// the benchmark KEP-2340 (consistent reads from cache) published its
// figures with, run here for upstream's cacher, freshcache, freshcache
// with FreshResourceVersionZero and no watch cache at all.
//
// # The shape
//
// Configmaps of ValueBytes (1 KiB) each, Objects of them (the KEP used
// 300,000; the default here is 100,000), and one consistent LIST
// (resourceVersion="") of every namespace's configmaps per second with a
// label selector that matches none of them. From a watch cache such a LIST
// costs a scan of the cache and almost nothing else; from etcd (ConfigEtcd,
// kube-apiserver --watch-cache=false) it reads and decodes every object.
// Upstream 1.37 already serves consistent LISTs from its cache
// (ConsistentListFromCache), so freshcache against upstream shows what its
// freshness costs here, and the etcd row what the KEP itself gained.
//
// # What Run does
//
// For each configuration, on a fresh local-up cluster (one kube-apiserver,
// embedded etcd, no controllers or nodes; lab/pkg/localup/launch):
//
//  1. writes the configmaps straight to etcd in kube-apiserver's storage
//     encoding (package etcdload), then writes one configmap through the
//     apiserver and reads it back with a consistent LIST: once that LIST
//     answers, the cache holds everything written before it;
//  2. runs the LIST client, open loop at ListRate, for Warmup and then for
//     Window, measuring each LIST's latency on the client and, around the
//     window, the apiserver's and etcd's CPU (/proc), the apiserver's RSS
//     and etcd's own request counters.
//
// # What it guarantees
//
//   - Every configuration gets the same objects, rate and windows.
//   - A LIST that fails or returns an object (none matches) counts as an
//     error; nothing is asserted about time.
//   - Nothing it starts outlives Run: each cluster is stopped before the
//     next starts.
package kepshape
