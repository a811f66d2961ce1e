// Package counters compares two samples of monotonic counters, keyed by
// name: what moved between them.
//
// # Who calls it
//
// The robustness and upstream e2e tests of this module, which sample
// kube-apiserver's /metrics before and after a run, and the cluster
// benchmark of tools/bench, which samples etcd's and the apiservers'
// counters around each measured window.
//
// # What it guarantees
//
// Delta is pure: it reads its arguments, never changes them, and returns a
// new map holding only the keys whose value differs, a key missing from
// before counting as zero. Keys found only in before are left out.
package counters
