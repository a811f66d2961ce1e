// Package ctxsleep waits a fixed time unless a context ends first.
//
// # Who calls it
//
// The benchmarks whose timeline is a schedule rather than a condition to
// wait for: cluster, stall, hollownodes and diag/netpollfloor pause between
// phases or samples with it, so that an interrupt ends the pause at once.
//
// # What it guarantees
//
// Sleep returns nil after d, or ctx.Err() as soon as ctx is done, whichever
// comes first; it leaves no timer running behind it.
package ctxsleep
