// Package ctxsleep waits a fixed time, or for a condition, unless a context
// ends first.
//
// # Who calls it
//
// The benchmarks whose timeline is a schedule rather than a condition to
// wait for: cluster, stall, hollownodes and diag/netpollfloor pause between
// phases or samples with it, so that an interrupt ends the pause at once.
// The apiserver, stall and storage benchmarks wait for a server or store
// to be ready with Poll.
//
// # What it guarantees
//
// Sleep returns nil after d, or ctx.Err() as soon as ctx is done, whichever
// comes first; it leaves no timer running behind it. Poll paces a
// condition check the same way: it checks at once and then every d, and
// returns nil once the condition holds or ctx.Err() once ctx is done.
package ctxsleep
