// Package localup is the machinery behind lab/cmd/local-up: a local Kubernetes
// cluster of child processes on one etcd. It writes the credentials (a CA,
// serving certs, service-account keys, and one client certificate per
// identity: the admin, system:kube-controller-manager,
// system:kube-scheduler and system:node:<name> for each hollow node),
// kubeconfig files, splits the command line between local-up and
// kube-apiserver, supervises the children and writes the ready file.
//
// Every component runs as its own child process: kube-apiserver keeps
// process-wide state (the metrics registry, feature gates), and so do the
// upstream kube-controller-manager, kube-scheduler and kubemark hollow
// nodes, which are unmodified binaries. Start brings them up in order
// (etcd, apiservers, controllers, nodes), waits for each to be ready and
// writes <data-dir>/ready.json (ReadyFile); a child that exits, at start-up
// or later (Cluster.Wait), ends the run, and Stop stops the children in
// the reverse order and removes what kubemark leaves in /tmp.
//
// Credentials are written once under the data directory and reused on
// restart, so a kubeconfig handed out earlier keeps working; only the
// apiservers' serving certificate is issued again (by the same CA) when it
// lacks a name the run needs.
//
// Every listener is on loopback (--bind-address), except with real nodes
// (realnodes.go): their kubelet serves on the node IP, and the first
// apiserver serves on it too, advertises it and keeps the kubernetes
// Service's endpoints, so pods reach the apiserver at 10.0.0.1:443 as in
// any cluster (kubernetesservice.go). The node IP is added to lo before
// the apiservers start, and removed by the real node's undo journal.
package localup
