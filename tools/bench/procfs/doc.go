// Package procfs reads what Linux's /proc says about processes the
// benchmarks started (a kube-apiserver, local-up and its embedded etcd,
// hollow nodes) and about the machine: CPU time in clock ticks, resident
// memory, whether a process is still there.
//
// # Who calls it
//
// The cluster and hollownodes benchmarks, around their measured windows;
// watchlist for its processes' CPU and RSS; stall for the exact VmRSS and
// VmHWM bytes (StatusBytes) of its apiserver and etcd.
//
// # What it guarantees
//
//   - A process that is gone, or a file or field that cannot be read,
//     counts as zero (CPUTicks skips it): a window's figures come out low
//     rather than the run failing halfway. Callers that must know use
//     Alive.
//   - The parsers are pure (parseStatTicks, parseStatusKB) and tested on
//     text; nothing here writes to /proc.
package procfs
