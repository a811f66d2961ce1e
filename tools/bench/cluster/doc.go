// Package cluster is `freshcache-bench cluster`, the cluster-level A/B
// benchmark (make bench-cluster): for each configuration (Upstream,
// Freshcache, FreshRV0) a fresh local-up cluster (kube-apiserver(s),
// embedded etcd, kube-controller-manager, kube-scheduler, N kubemark
// hollow nodes) under the same seeded load, measured from /proc and the
// servers' own metrics.
//
// # What one cell runs
//
// # Hollow and kwok nodes
//
// The nodes are kubemark hollow nodes (NodesHollow, make bench-cluster)
// or kwok nodes (NodesKwok, `freshcache-bench scale`, make bench-scale):
// one kwok controller keeps thousands of Node objects Ready and plays
// their pods' lifecycle, where a hollow node is a whole kubelet process.
// kwok sends no per-node pod watch, so Config.NodeWatches adds one per
// node in the informer children (spec.nodeName, half with WatchListClient
// on), and Config.Storm restarts all of them at once after the window
// (storm.go): the kubelets after an apiserver rolling restart.
//
// A cell is one configuration at one node count, on one apiserver
// (single) or two apiservers over three etcd members (ha). Run runs the
// cells of a Config in an interleaved order (cells), each in turn
// (runCell, cell.go):
//
//  1. local-up with the configuration's kube-apiserver flags, the
//     controllers and the hollow nodes (lab/pkg/localup/launch);
//  2. Deployments of Config.PodsPerNode pods per node and the freshness
//     probe's pod, rolled out at a bounded pace;
//  3. the informer children (informers.go): freshcache-bench run again as
//     InformerChildSubcommand, half of them with client-go's
//     WatchListClient on, restarting every Config.InformerRestart;
//  4. the churn (churn.go), a schedule of scale-ups, scale-downs and
//     rollouts made from Config.Seed alone, over the warm-up and the
//     measured window; in the window also the LIST clients at fixed rates
//     and the freshness probe, which writes a pod and reads it back at once
//     four ways (clients.go);
//  5. samples of every server's /metrics and /proc CPU around the window
//     (metrics.go) and, with Config.CPUProfile, a CPU profile of each
//     apiserver over it, split by part (profile.go); the restart storm
//     when asked for, then the idle cluster and each read kind alone
//     (calibration), which the cost model (model.go) turns into an
//     estimate at KEP-2340's 5,000 nodes.
//
// A Row is one cell's figures; a Report is the run's rows with their cost
// models, written as JSON, markdown (WriteMarkdown, ending with the
// closing Ratios line) and plots (Plot). MergeReports puts the cells of
// several runs of the same load into one report.
//
// # Who calls it
//
// cmd/freshcache-bench (the cluster subcommand, and its
// cluster-informers children through RunInformerChild); the watchlist
// scenario uses the configuration names. Tests in this package cover the
// pure parts: the configuration's checks and cell order, the churn
// schedule, metric reduction, the cost model, ratios, merging and
// rendering.
//
// # What it guarantees
//
//   - Every configuration gets the same churn schedule and read sequence
//     (Config.Seed), and a fresh cluster: no cell inherits another's heap
//     or etcd history.
//   - A cell that fails is reported and the run goes on; the error names
//     every failed cell and where its logs are.
//   - The targets in the report are reported, never asserted; cost ratios
//     are judged only when the configurations served comparable work.
//   - It talks to loopback only, and the processes it starts (local-up,
//     the informer children) die with it.
package cluster
