// Package tracewait reads a Go execution trace (runtime/trace) of a process
// that serves consistent reads through freshcache and says where the
// freshness wait went.
//
// The cache marks each read's wait with the region
// watchcache.TraceRegionWait and each revision fetch with
// oracle.TraceRegionFetch. The reader blocks inside its wait region until
// the freshness driver releases it, so the trace splits every wait in two:
//
//   - until release: from the read's arrival until the driver made the
//     reader runnable (covers the revision fetch the read needs, and the
//     one in flight when it arrived);
//   - release to run: from then until the reader was running again, which
//     is time in the Go scheduler's run queue, not freshness.
//
// It also reports the fetches' own durations, how much of the trace the
// garbage collector spent in its mark phase, and whose goroutines held the
// CPU: over the whole trace, and inside the release-to-run windows of the
// slowest waits (readers, GC mark workers, everything else).
//
// Finally it reports the P time left idle: stretches of at least
// Options.MinIdle in which fewer goroutines were busy than the trace has
// Ps, where a GC mark worker the runtime labelled as idle-mode does not
// count as busy (it only runs on a P that has nothing else to do). Each
// fetch is split at the first idle stretch it overlaps, which tells
// whether fetches finish only once the readers have drained the run
// queues, or while the Ps are still busy.
//
// # Who calls it
//
// cmd/freshcache-bench trace-wait, on a trace written by
// freshcache-bench storage --trace or fetched from kube-apiserver's
// /debug/pprof/trace. Nothing else.
//
// # What it guarantees
//
//   - Analyze only reads; it never times anything itself. Every figure is a
//     difference of two trace timestamps.
//   - The release is the last time the reader was made runnable from a
//     blocked state inside its region: the driver's send of the verdict.
//     (A reader that found its verdict already there without blocking on
//     it, after blocking on the driver's lock, would count that lock's
//     wake instead; the cache's fetches take far longer than that path.)
//     A block on a GC assist (an allocation made to help the collector
//     finish) is not a release: the reader was not waiting for the cache.
//   - A wait whose reader never blocked counts with its whole length until
//     release and zero release to run.
//   - Regions still open when the trace ends are left out.
package tracewait
