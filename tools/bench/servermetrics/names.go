package servermetrics

// The freshness metrics of freshcache, which both the storage and the
// cluster benchmarks read.
const (
	// FreshcacheRelease is the part of freshcache's wait until the
	// freshness protocol released the read; the rest of the wait is the
	// reader's queue for a CPU.
	FreshcacheRelease = "apiserver_freshcache_read_release_seconds"
	// FreshcacheFetch is freshcache's revision-fetch round trip: the floor
	// under its consistent reads' wait. Only freshcache fetches revisions.
	FreshcacheFetch = "apiserver_freshcache_revision_fetch_duration_seconds"
	// FreshcacheProgress counts the progress requests freshcache sends on
	// its watch streams.
	FreshcacheProgress = "apiserver_freshcache_progress_requests_total"
)

// WaitMetric is the freshness-wait histogram of a watch cache
// implementation (kube-apiserver's --watch-cache-implementation value,
// which is also the storage backend's name): upstream's cacher records
// its own wait for consistent LISTs, freshcache its apiserver_freshcache_*
// one. "" for anything else (reads from etcd never wait).
func WaitMetric(impl string) string {
	switch impl {
	case "upstream":
		return "apiserver_watch_cache_read_wait_seconds"
	case "freshcache":
		return "apiserver_freshcache_read_wait_seconds"
	}
	return ""
}
