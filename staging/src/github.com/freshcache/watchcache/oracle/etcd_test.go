package oracle

import (
	"context"
	"github.com/freshcache/watchcache/internal/etcdcluster"
	"net/url"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Embedded etcd for the oracle's tests. Real servers, no mocks.

func newClient(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
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
	cfg := etcdcluster.MemberConfig(t, "single")
	peerURL := etcdcluster.HTTPURL(etcdcluster.FreeAddr(t))
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	etcdcluster.WaitReady(t, e)
	endpoint := cfg.AdvertiseClientUrls[0].String()
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
