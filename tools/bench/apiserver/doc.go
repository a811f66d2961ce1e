// Package apiserver is `freshcache-bench apiserver` (make
// bench-apiserver): the storage benchmark's pods read through real
// kube-apiservers. Two local-up processes share one etcd (the first one's
// embedded etcd; the second gets --etcd-servers), each running one
// kube-apiserver with its own --watch-cache-implementation (Config.Impls:
// upstream and freshcache by default). The data set and the background
// writes are package storage's (storage.Env), written straight to etcd.
//
// # What a run measures
//
// Run measures each server in turn while the other idles, with clients
// on protobuf and no client-side rate limit: LIST by node and GET at
// rv="" and rv=0, and WATCH delivery latency (pods written straight to
// etcd, each carrying the time it was written), for every client count
// of Config.Clients. Around each row it reads the server's /metrics (CPU,
// heap, GC cycles, its freshness-wait histogram) and etcd's (requests per
// op), and with Config.ProfileDir the server's CPU profile over the row.
// A Row is one operation at one client count on one server; a Report
// carries the rows to docs/results/ as JSON and markdown.
//
// # Who calls it
//
// cmd/freshcache-bench: the apiserver subcommand, and plot --markdown,
// which renders a Report again from its JSON.
//
// # What it guarantees
//
//   - Both servers read the same etcd and the same data, and only the
//     server under test is loaded while its rows run.
//   - A --watch-cache-implementation that kube-apiserver refuses is
//     skipped, or replaced by Config.Fallback under a label that says so
//     ("X-as-Y"); either way the report's notes say what happened.
//   - It never asserts on time; wrong item counts and errors are counted
//     in the rows.
//   - It talks to loopback only.
package apiserver
