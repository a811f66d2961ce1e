// Package stall is `freshcache-bench stall`: what an etcd stall costs a
// kube-apiserver whose clients keep listing a large resource with
// consistent reads (rv=""), the failure of kubernetes#138494.
//
// Upstream serves a consistent LIST from its watch cache once the cache
// has caught up with etcd's current revision, and sends it to etcd after
// 3 s. When etcd stalls, every waiting LIST can become an etcd LIST at
// once, and etcd and the apiserver both hold every answer at the same
// time. This package measures that side by side for several
// configurations (upstream's fallback, upstream's alpha gate
// ConsistentListFromCacheSkipTimeoutFallback, freshcache with its fallback
// budget, freshcache with --consistent-read-timeout-action=reject,
// freshcache without a budget), one after another, each on a fresh
// cluster.
//
// # What one configuration runs
//
//  1. An etcd in a process of its own (Config.EtcdCommand, normally
//     `freshcache-bench etcd`), so that SIGSTOP stalls etcd and nothing
//     else.
//  2. Config.Objects configmaps of Config.ObjectBytes each in one
//     namespace, written straight to etcd in kube-apiserver's storage
//     encoding.
//  3. local-up (lab/pkg/localup/launch) with --etcd-servers and the
//     configuration's kube-apiserver flags; the run waits until the
//     apiserver's cache serves every object.
//  4. Config.Clients readers, each on its own connection, listing the
//     namespace with rv="" in a loop (protobuf, no compression, no client
//     retries: every status is counted; after a 429 the reader waits its
//     Retry-After), and Config.WritesPerSec configmap updates straight to
//     etcd, so that the cache must keep moving.
//  5. Warm-up, then the steady window (the pre-stall level), then
//     SIGSTOP of etcd for Config.Stall (optionally with Config.StallWrites
//     updates queued at the stopped etcd, which land together when it
//     resumes), SIGCONT, and Config.After of observation. Readers then
//     stop starting reads and every read in flight is waited for, so that
//     none is lost uncounted.
//
// Throughout, the kube-apiserver's and etcd's VmRSS are sampled every
// Config.SampleEvery, the apiserver's cache metrics every 2 s and
// etcd's every 250 ms.
//
// # Who calls it
//
// cmd/freshcache-bench (the stall subcommand; `make bench-stall`). Tests
// in this package cover the pure parts: statistics, report rendering and
// configuration checks.
//
// # What it guarantees
//
//   - Every configuration gets the same data, load and timeline, and a
//     fresh etcd and apiserver, so that no configuration inherits another's
//     heap or etcd history.
//   - Every read a reader started is counted exactly once, by the class of
//     its answer (2xx, 429, 5xx, other); "other" includes client-side
//     timeouts and connection errors.
//   - etcd is always resumed (SIGCONT) before it is stopped, also when the
//     run fails or is interrupted.
//   - It never asserts on time; Result only reports what was measured.
//   - It talks to loopback only.
package stall
