// Package metrics defines freshcache's metrics on the Kubernetes
// component-base legacy registry, so that they appear on an apiserver's
// /metrics next to (never colliding with) upstream's apiserver_watch_cache_*.
//
// Every name starts with apiserver_freshcache_ and every series carries the
// labels group and resource.
//
// # Who calls it
//
// The watchcache package builds one Recorder per cached resource (through
// For, unless Options supplies its own) and hands it to the reflector and
// the fan-out. Nothing on a request path touches a global: the Recorder holds
// the resolved label values.
//
// Register is idempotent; For calls it.
package metrics
