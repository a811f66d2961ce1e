package oracle

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/freshcache/watchcache/internal/testing/etcdcluster"
)

// Embedded etcd for the oracle's tests. Real servers, no mocks.

func newClient(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	return etcdcluster.Client(t, endpoint)
}

// single is a one-member cluster. stop may be called any number of times.
type single struct {
	endpoint string
	stop     func()
}

// startEtcd starts a one-member cluster and returns it with a client. Both
// are closed when the test ends; closing them earlier is fine.
func startEtcd(t testing.TB) (single, *clientv3.Client) {
	t.Helper()
	e, stop := etcdcluster.StartSingle(t)
	endpoint := etcdcluster.ClientURL(e)
	return single{endpoint: endpoint, stop: stop}, newClient(t, endpoint)
}

func put(t testing.TB, c *clientv3.Client, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Put(ctx, key, "v")
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}
