// Package versionguard decides whether an etcd cluster's watch progress
// notifications can be trusted for consistent reads.
//
// Before etcd 3.4.31 and 3.5.13 a progress notification could carry a
// revision the watch had not yet delivered all events for (etcd#15220), or
// be sent on the wrong watch stream (etcd#17507). A cache that advanced its
// revision on such a notification could serve a "fresh" read that misses
// writes. The cache therefore asks every endpoint for its version when it
// starts, and if any is too old it serves no consistent read from memory:
// those reads are delegated to etcd, the guard logs once, and a metric says
// so.
//
// Callers: the watchcache decorator, once per etcd client. Supports is a
// pure function; Check makes one Status call per endpoint.
package versionguard
