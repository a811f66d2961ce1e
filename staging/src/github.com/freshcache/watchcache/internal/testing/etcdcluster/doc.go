// Package etcdcluster runs a 3-member embedded etcd for tests, with every
// member's peer traffic passing through a proxy the test controls, so that a
// member can be cut off from its peers in both directions and healed again.
// It is what the seed-scenario, restart, linearizability and oracle
// partition tests stand on. It depends on nothing in this module, so every
// package's tests (the oracle's internal tests included) can use it.
package etcdcluster
