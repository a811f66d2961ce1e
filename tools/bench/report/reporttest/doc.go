// Package reporttest holds the checks that the benchmark packages' tests
// make of a written report, whichever benchmark wrote it.
//
// # Who calls it
//
// Tests only (it imports testing): the report tests of storage, cluster,
// stall, watchlist, kepshape and the diag tools.
//
// # What it guarantees
//
// CheckPNGs opens every path it is given and fails the test, naming the
// file, for each one that is not a PNG; a path that cannot be opened
// stops the test. CheckContains fails the test once for each expected
// string a report lacks, and shows the report. Render returns what a
// writer function wrote, stopping the test on its error.
package reporttest
