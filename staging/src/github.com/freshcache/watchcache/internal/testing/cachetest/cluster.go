package cachetest

import (
	"testing"

	"github.com/freshcache/watchcache/internal/testing/etcdcluster"
)

// Cluster is the 3-member etcd with controllable peer links of package
// etcdcluster.
type Cluster = etcdcluster.Cluster

// StartCluster starts a Cluster; Cleanup stops it.
func StartCluster(t testing.TB) *Cluster { return etcdcluster.Start(t) }
