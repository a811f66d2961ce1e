// Package repotest is what the repository tests of docscheck, figures and
// makehelp share: each checks this repository's own files, runs only when
// make verify sets FRESHCACHE_VERIFY_DOCS=1, and reports every problem it
// finds at once.
//
// # Who calls it
//
// The TestRepository functions of the packages beside it, and only tests:
// it imports testing.
//
// # What it guarantees
//
// Root skips the calling test, with the same message shape for every
// package, unless FRESHCACHE_VERIFY_DOCS is set, and otherwise returns the
// repository's root as an absolute path. It imports none of its callers,
// so that their in-package tests may use it.
package repotest
