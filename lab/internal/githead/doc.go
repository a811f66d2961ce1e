// Package githead says which commit of the repository a test report was
// made from.
//
// # Who calls it
//
// The lab's reporting tests (demo59848, the upstream e2e conformance run),
// which stamp their reports with the commit.
//
// # What it guarantees
//
// Head runs git in the current directory and never fails: when git cannot
// tell, the commit is "unknown" and not dirty.
package githead
