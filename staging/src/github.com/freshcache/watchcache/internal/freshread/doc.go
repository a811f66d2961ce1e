// Package freshread carries out the reads of a cache that need
// freshness: the consistent-read wait and what its end means for the
// request, the fallback budget of reads sent to etcd after a timeout, and
// the retries of reads that meet etcd's passing troubles.
//
// # Who calls it
//
// The root package's Cache holds one Reader, built once its driver is, and
// its GetList, Get, Watch and size estimation call it whenever
// internal/plan planned a read as Fresh, NotOlder or Exact, or sends it to
// etcd:
//
//   - Wait waits (through internal/driver) and answers FromCache (serve a
//     snapshot taken after the return), FromEtcd (call FallBack) or the
//     client's error; plan.Wait.After decides which from how the wait
//     ended, and Wait counts the read's metrics.
//   - FallBack admits a read to etcd within the fallback budget, or
//     answers 429; Etcd runs any read of etcd with its retries.
//   - WaitFor waits, without metrics, until the cache reached a revision
//     (Exact LISTs, the size estimator's keys).
//
// # What it guarantees
//
// Stale data is never served: FromCache is returned only once the
// driver released the read (the cache revision reached its target) or the
// cache had reached it already. Every wait ends with ctx, the cache's stop
// channel or the driver's deadline; none sleeps. Errors meant for clients
// are the Kubernetes ones (429 with Retry-After, TooLargeResourceVersion),
// so clients back off and retry. A read sent to etcd after a timeout is
// counted in the budget until its answer is in. The budget's lock is a
// leaf: nothing is called while it is held.
package freshread
