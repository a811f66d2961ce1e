// Package hollownodes is `freshcache-bench hollow-nodes` (make
// bench-hollow-nodes): what a kubemark hollow node costs on this machine,
// so that the cluster benchmark's node counts fit it. For each node count
// it starts local-up with the controllers and N hollow nodes
// (lab/pkg/localup/launch), lets it settle, and measures one idle window and
// one window of pod churn (a Deployment whose pods are deleted at a
// steady rate and replaced by their ReplicaSet): per node RSS (and its
// anonymous part, what one more node adds) and CPU, the control plane's
// CPU and RSS, the machine's idle share and free memory, all from /proc
// (package procfs).
//
// # Who calls it
//
// cmd/freshcache-bench (the hollow-nodes subcommand), which writes the
// heading and WriteMarkdown's table (make bench-hollow-nodes:
// _output/bench/hollow-nodes.md; the run the docs keep is in
// docs/investigations/hollow-node-cost.md).
//
// # What it guarantees
//
//   - Each node count gets a fresh local-up, stopped before the next
//     starts, so that no count measures another's processes.
//   - It never asserts on what it measures; a count that fails stops the
//     run, and the rows measured before it are returned.
package hollownodes
