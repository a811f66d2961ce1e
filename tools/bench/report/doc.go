// Package report holds what every benchmark report of freshcache-bench
// shares, whichever benchmark wrote it: the run's identity (kind, date,
// the commit it was built from, the command line, the machine, notes),
// written as the JSON's leading fields and as the markdown's heading; the
// JSON file itself; the plots' page layout and colors; the row tables
// (text and markdown), the figure format Num, and FirstError, the first
// error of a row's many goroutines.
//
// # Who calls it
//
// The benchmark packages (storage, apiserver, cluster, stall, watchlist,
// kepshape) and cmd/freshcache-bench, which also quotes GitCommit and ThisMachine in
// the diagnostics it writes itself (trace-wait, netpoll-floor,
// hollow-nodes).
//
// # What it guarantees
//
//   - GitCommit names the commit the binary was built from when the
//     Makefile stamped one (-X .../tools/bench/report.buildCommit=...);
//     otherwise it asks git, read-only, at run time.
//   - An Identity embedded in a report struct keeps its fields first in
//     the JSON, in a fixed order, so that reports of every kind start
//     alike and older files read back.
//   - Color gives an implementation the same color in every plot.
package report
