// Package makehelp keeps `make help` short and `make help-all` complete:
// every target the Makefile declares .PHONY is one a reader may run, so
// each must show up in exactly one of the two lists, with a line saying
// what it does (and, by the repository's habit, how long it takes when
// that is more than a few seconds). `make help` lists the everyday
// targets, at most MaxEveryday of them; `make help-all` the rest
// (diagnostics, short and long variants, build steps, old names).
//
// # What it checks
//
// Check reads a Makefile's text:
//
//   - every target named on a .PHONY line (continuation lines included)
//     must have a rule line a help recipe lists: the target name alone
//     before the colon, letters, digits, '_' and '-' only, then after its
//     prerequisites "## " (make help) or "### " (make help-all) and a
//     non-empty text (HelpRule);
//   - no target may have two such rule lines, so each is in one list once;
//   - make help lists at most MaxEveryday targets;
//   - every line either recipe prints (Lines: the names padded to the
//     longest in that list) is at most MaxLine characters, under 100;
//   - every rule a help recipe lists must be .PHONY, so that a file of
//     the same name can never make it "up to date".
//
// The repository test also runs `make help` and `make help-all` and checks
// that they print exactly the lines Lines renders, that no line they print
// is longer than MaxLine, and that together they name every .PHONY target
// once, so the recipes and HelpRule cannot drift apart.
//
// # Who runs it
//
// make verify (verify-docs) runs TestRepository with
// FRESHCACHE_VERIFY_DOCS=1 on the repository's Makefile. Without that
// variable it skips, as docscheck's does, so a plain `go test ./...` runs
// only the table tests.
package makehelp
