// Package kindupgrade rolls the kube-apiservers of a kind cluster with
// three control planes from upstream's watch cache to freshcache, one at
// a time, and back, under steady traffic, and counts per step what a
// client saw: failed requests by status, stale answers, watch restarts
// and relists. It is the upgrade and rollback check the KEP's
// production-readiness section describes (make test-kind-upgrade).
//
// How a run goes (upgrade.go): hack/kind-up.sh --ha brings up the
// cluster with every kube-apiserver on upstream's cacher; the counter
// traffic of package counterload starts, its writer through kind's load
// balancer and its four readers (GET and LIST at rv="" and rv=0) through
// each control plane's own apiserver, with pod informers (one per node,
// as kubelets have) through the load balancer. Then the steps of Plan run
// one after the other: each rewrites one control plane's static pod
// manifest (the watch cache flag and a generation flag, so that every
// step restarts exactly one kube-apiserver the same way), waits until
// that apiserver serves again, and lets the traffic run for a while.
// The first three steps restart each apiserver with its flags unchanged:
// the control, a rolling restart of upstream's own image.
//
// What a read was promised (tally.go): rv="" is fresh on both caches;
// rv=0 only on freshcache (within --resource-version-zero-max-staleness
// of the read's start), and not from an apiserver that was being replaced
// while the read was in flight, since either process may have answered.
package kindupgrade
