// Package docscheck keeps the repository's documentation self-contained: a
// reader of the repository can follow every link and citation in it, and
// nothing points at a tracker or a file outside it.
//
// # What it checks
//
// In every tracked markdown file (Check, markdown.go):
//
//   - a relative link (inline, image, reference definition, or an HTML
//     href/src) must not leave the repository;
//   - it must name a path that exists (a leading "/" is the repository root,
//     as on GitHub);
//   - a "#anchor", in the same file or in another markdown file, must match
//     a heading there under GitHub's slug rules (Slug) or an HTML id/name.
//
// Links with a scheme (https:, mailto:) and links inside code are not
// checked.
//
// In every file of WordLimits (words.go): no more words than its limit,
// counted as wc -w counts them. docs/kep.md may have 6,000, so that it
// stays a review artifact that links to its evidence.
//
// In every tracked text file, except those in Allowed:
//
//   - no path through a directory named "shared/" (the team's notes outside
//     the repository);
//   - no tracker issue or task number: "issue 4", "Issue 19's",
//     "issues 4 and 5", "task 3", ISSUE4_SHAPE. Upstream issues are cited
//     as owner#number (kubernetes#59848, etcd-io/etcd#20229), which this
//     rule does not match; "kubernetes issue 123" and "etcd issue 123" are
//     let through as well. A verb that happens to precede a number ("it
//     issues 2 fetches") is reported too: say "sends";
//   - a section citation, `path.md, "Heading"` (as in Go comments:
//     docs/design.md, "The protocol"), must name a markdown file that
//     exists, relative to the citing file or to the repository root, and a
//     heading in it. Comment markers at line starts are ignored, so a
//     citation may wrap.
//
// # Who runs it
//
// make verify runs TestRepository with FRESHCACHE_VERIFY_DOCS=1, over the
// files `git ls-files` lists. Without that variable the test skips, so a
// plain `go test ./...` runs only the checker's own table tests.
package docscheck
