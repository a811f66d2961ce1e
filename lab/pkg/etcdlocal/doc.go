// Package etcdlocal runs a real etcd (go.etcd.io/etcd/server/v3/embed) inside
// the calling process: one member, or a cluster of several members on
// loopback. It is what lab/cmd/local-up and the tests use when no external etcd is
// given with --etcd-servers.
//
// Guarantees: Start returns only when every member serves clients, or an
// error that says why not (a port in use, a timeout, a bad data directory).
// Data lives under Options.DataDir, one directory per member, and survives a
// restart with the same options.
package etcdlocal
