// Package driver runs one cache's freshness.Machine: it is where a
// consistent read waits. The Machine decides; the Driver does the I/O the
// Machine asks for, which the freshness package lists as its caller
// duties:
//
//   - a reader calls Wait (WaitPatient for a watch, WaitWithin with its own
//     deadline), which registers the read and blocks on a channel of its
//     own, its context and the cache's stop channel, and returns a Verdict:
//     Released (serve a snapshot taken now), Failed (the covering revision
//     fetch failed) or TimedOut;
//   - revision fetches go to the Source (an oracle.Oracle in production),
//     one goroutine per fetch, FetchIssued recorded before the request
//     leaves, so the revision always comes from a fetch issued after the
//     read arrived;
//   - progress requests go to the cache's own watch stream;
//   - the cache reports what it applied (Applied, ProgressNotified,
//     Advanced, RevisionPending) after publishing it, so a released read's
//     snapshot is at or past its target;
//   - Run owns the one timer, armed at the earliest read deadline or
//     progress-request stall.
//
// What a Verdict means for the request (serve, fall back to etcd, 429,
// "too large resource version") is internal/plan's decision (Wait.After);
// internal/freshread is the I/O around it.
//
// The Driver's lock is a leaf: only Machine calls, non-blocking channel
// sends and goroutine starts happen under it.
package driver
