// Package e2e drives the real binaries: it starts lab/cmd/local-up (embedded etcd
// plus kube-apiserver child processes) on free loopback ports and talks to it
// with client-go and kubectl, once per watch cache implementation.
//
// The binaries come from $FRESHCACHE_BIN_DIR (set by `make test`); without it
// TestMain builds them into a temporary directory.
package e2e
