// Package figures keeps the figures the docs quote from the benchmark and
// test results in docs/results derived, not typed: each one is computed
// from the results file it comes from, written into the docs by a
// generator, and checked by make verify.
//
// # Marked figures
//
// A figure in a markdown file sits between two HTML comments that name
// its key:
//
//	at 75 nodes, <!-- fig:cluster.ratio.etcd-reads -->0.46<!-- /fig -->× its etcd reads
//
// GitHub does not render the comments. A span may be a whole table or a
// quoted block, with the markers on lines of their own. Spans do not nest,
// and a marker inside inline code or a fenced block is still a marker, so
// docs that explain the syntax spell it out without one.
//
// # Keys
//
// All lists every Figure: its key ("<results file>.<what>", e.g.
// storage-20k.list-node.freshcache.ops), the results files it reads (From),
// what it is, and Get, which computes a Value from the results: the text
// the docs print ("5,038", "0.68–0.76", "3 of 3", a table) and the exact
// number behind each number in it. JSON is read where the benchmark writes
// it (storage*, consistent-reads, apiserver, memory*, cluster, stall,
// watchlist); the markdown-only results (robustness, demo-59848,
// e2e-conformance, fault-heal) are read from their tables and closing
// lines. `go run ./internal/repotools/figures/cmd/figures -list` prints
// every key with its value, tolerance and files.
//
// # Tolerance
//
// A marked span passes when it has the rendering's words (white space
// aside) and each of its numbers is within its tolerance of the exact
// value: half a unit of the last digit the rendering prints (0.005 for
// "0.46", 0.5 for "5,038", 500 for "29,000"), and none for counts spelt
// out, commits and dates. So a figure rounded differently by hand still
// passes, and one that the results contradict does not.
//
// # The results index
//
// docs/results/README.md must name every file of docs/results in its first
// table, and nothing else; its "Where each file is cited" table is the
// figure index.citations, computed from the links and the marked figures
// of every tracked markdown file.
//
// # Who runs it
//
//   - make verify runs TestRepository with FRESHCACHE_VERIFY_DOCS=1, over
//     the files git ls-files lists: every span, the index, and every key
//     marked somewhere (a figure nothing quotes goes). Without the
//     variable the test skips, so a plain go test runs only the table
//     tests.
//   - make figures (cmd/figures -w) rewrites every span from the results,
//     after a benchmark rerun, then checks.
//
// # Adding a figure
//
// Add a Figure to the keys_*.go file of its results, mark the figure in
// the doc with the current text inside, and run make figures: the
// generator writes what the results say. Never type a figure from
// docs/results into a doc unmarked.
package figures
