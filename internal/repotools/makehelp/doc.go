// Package makehelp keeps `make help` complete: every target the Makefile
// declares .PHONY is one a reader may run, so each must show up in the
// list `make help` prints, with a line saying what it does (and, by the
// repository's habit, how long it takes when that is more than a few
// seconds).
//
// # What it checks
//
// Check reads a Makefile's text:
//
//   - every target named on a .PHONY line (continuation lines included)
//     must have a rule line the help recipe lists: the target name alone
//     before the colon, letters, digits, '_' and '-' only (HelpRule), and
//     "## " with a non-empty text of at most MaxHelp characters after its
//     prerequisites;
//   - every rule the help recipe lists must be .PHONY, so that a file of
//     the same name can never make it "up to date".
//
// The repository test also runs `make help` and checks that its output
// names every .PHONY target, so the recipe and HelpRule cannot drift apart.
//
// # Who runs it
//
// make verify (verify-docs) runs TestRepository with
// FRESHCACHE_VERIFY_DOCS=1 on the repository's Makefile. Without that
// variable it skips, as docscheck's does, so a plain `go test ./...` runs
// only the table tests.
package makehelp
