// Package testenv reads the environment variables through which make hands
// the lab's long tests their inputs: the built binaries
// (FRESHCACHE_BIN_DIR), a suite or report to read, a directory to write to.
//
// # Who calls it
//
// Tests only (it imports testing): the upstream e2e, demo59848, realnode
// and robustness tests, which run only when make sets their variables.
//
// # What it guarantees
//
// Skip skips and Require fails the test, with the caller's message, when
// the variable is unset or empty; DirOr falls back to a t.TempDir that the
// test removes. None of them reads anything but the one variable.
package testenv
