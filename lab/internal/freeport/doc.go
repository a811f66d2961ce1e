// Package freeport picks TCP ports for servers that local-up and the tests
// start on loopback: embedded etcd members, kube-apiservers, the
// controllers' and hollow kubelets' serving ports.
//
// A port that is free when picked may be taken before the caller binds it.
// Port makes that unlikely by choosing, at random, among ports outside the
// kernel's ephemeral range, which the kernel hands out as source ports of
// outgoing connections; asking the kernel for ":0" returns one of exactly
// those, and a busy test binary opens many connections. A server that can
// bind ":0" itself and report its address needs no picker at all: that is
// what the library's own tests do with their embedded etcd, and what
// local-up's --secure-port=0 spares the launcher.
//
// # Who calls it
//
// Package etcdlocal (local-up's embedded etcd, members i of a 3-member
// cluster need each other's peer ports before any starts), package localup
// (the ports it hands to its child processes), and the e2e, robustness and
// demo59848 tests, which start servers on ports they must name. It is
// internal to this module, not part of the watchcache library's surface;
// tools/bench may import it (Go's internal rule is by import path). It
// never binds a port for the caller.
package freeport
