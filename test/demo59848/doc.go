// Package demo59848 replays kubernetes#59848 with real kubelets: a
// 3-member etcd whose every peer link passes through a fault proxy
// (test/robustness), kube-apiserver A pinned to member 0 with the
// controller-manager and the scheduler, kube-apiserver B pinned to member 1
// with one kubemark hollow node N. A pod bound to N runs; member 1 is cut
// off from its peers; the pod is deleted through A; N's kubelet restarts
// and lists its pods from B. The test records whether the new kubelet's
// fake runtime started the deleted pod, and which requests it sent B (B's
// audit log), once with each of upstream's cacher, freshcache, and
// freshcache with FreshResourceVersionZero. It fails if either freshcache
// run starts the deleted pod; upstream's run is recorded, not asserted.
//
// It runs only with FRESHCACHE_DEMO_59848=1 and FRESHCACHE_BIN_DIR (make
// demo-59848): three runs take longer than `make test` allows.
package demo59848
