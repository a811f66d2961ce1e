// Package realnode tests local-up --real-nodes=1 end to end on this
// machine: containerd and a real kubelet beside the control plane, a
// busybox pod that runs as a real process, kubectl logs and exec through
// the apiserver and the kubelet, a Service reached through kube-proxy's
// rules from a pod and from the host, a pod that reaches the apiserver
// through the kubernetes Service with client-go's in-cluster configuration
// (the incluster helper, built by the test and mounted into the pod), a
// crash of local-up followed by a start that undoes what it left, and a
// host left as it was found (addresses, devices, sysctls, iptables,
// mounts, cgroups, directories, processes).
//
// It changes the host, so it runs only as root with FRESHCACHE_REAL_NODES=1
// (make test-real-nodes, about a minute plus make build; not part of make test), and
// needs the binaries of make build in FRESHCACHE_BIN_DIR. Its data
// directory is <bin dir>/../test-real-nodes, kept for the logs.
package realnode
