// Package configcheck is what the benchmarks' Config.Validate methods
// share: a Problems list that gathers every problem of a configuration, so
// that one call reports them all, and the check of the list of
// configurations a run is to compare.
//
// # Who calls it
//
// The stall, watchlist and kepshape benchmarks, each from its
// Config.Validate; the messages stay each benchmark's own, given as
// formats.
//
// # What it guarantees
//
//   - Err joins the problems in the order they were added, nil when there
//     is none.
//   - Every problem wraps the sentinel given to New (when there is one), so
//     that a caller checks the kind with errors.Is.
//   - Names reports an empty list once, every unknown name, and every name
//     that comes again (when its rule has a Twice message), in list order.
package configcheck
