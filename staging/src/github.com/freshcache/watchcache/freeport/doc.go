// Package freeport picks TCP ports for servers that tests and local tools
// start on loopback: embedded etcd members, kube-apiservers.
//
// A port that is free when picked may be taken before the caller binds it.
// Port makes that unlikely by choosing, at random, among ports outside the
// kernel's ephemeral range, which the kernel hands out as source ports of
// outgoing connections; asking the kernel for ":0" returns one of exactly
// those, and a busy test binary opens many connections.
//
// # Who calls it
//
// The embedded etcd of package etcdlocal (kube-apiserver's local-up, the
// benchmark), the e2e and robustness tests, and this module's own test
// helpers (internal/etcdcluster). It never binds a port for the caller.
package freeport
