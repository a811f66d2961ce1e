// Package kwoknode describes the simulated nodes of local-up --kwok-nodes:
// Node objects that no kubelet backs, kept alive by one kwok controller
// (sigs.k8s.io/kwok v0.8.0, built unchanged by make build-kwok from the nested
// module tools/kwok). kwok renews each node's Lease, reports the node
// Ready, moves the pods bound to it to Running and finishes their
// deletion, as the stages in Options.Config say; it runs no containers
// and no per-node watch. A kwok node costs a few kilobytes of the
// controller's heap where a kubemark hollow node costs a whole kubelet
// process (about 17 MB), which is what lets a 2-core machine hold
// thousands of nodes.
//
// # What a kwok node is, and what it is not
//
//   - Its Node object is created by local-up (Options.Node), with the
//     ManagedLabel kwok selects its nodes by, the capacity of a typical
//     kubelet (110 pods) and an InternalIP that no interface has: the
//     apiserver cannot reach a kubelet there, so logs, exec and
//     port-forward fail for its pods.
//   - Its Lease is renewed every quarter of NodeLeaseDurationSeconds (40
//     s, the kubelet's default), and its status is written every
//     NodeStatusInterval (5 min, the kubelet's nodeStatusReportFrequency
//     when leases are on), with 10% jitter.
//   - Its pods go from Pending to Running with every container ready in
//     one step, with a pod IP from PodCIDR; a pod being deleted is
//     removed at once (kwok deletes it with no grace period).
//   - What a kubelet asks of the apiserver beyond that (its pod watch on
//     spec.nodeName, the ConfigMaps and Secrets its pods mount) is not
//     simulated here: the scale benchmark runs those clients itself.
//
// # Who calls it
//
// Package localup: it creates the nodes, writes Config to the data
// directory, starts kwok with Args under its supervision, and waits until
// every node is Ready. The configuration is the same for every watch
// cache implementation, so benchmarks compare like with like.
package kwoknode
