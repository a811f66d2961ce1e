package watchcache_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/internal/testing/etcdcluster"
	"github.com/freshcache/watchcache/oracle"
)

// decorate builds one resource's storage with dec on cfg.
func decorate(dec generic.StorageDecorator, cfg *storagebackend.Config, resource string) (storage.Interface, func(), error) {
	rc := cfg.ForResource(schema.GroupResource{Resource: resource})
	return dec(rc, "/"+resource, func(obj runtime.Object) (string, error) {
		return storage.NamespaceKeyFunc("/"+resource+"/", obj)
	}, cachetest.NewPod, cachetest.NewPodList, cachetest.PodAttrs, nil, nil)
}

// buildCache is decorate for a decorator that must succeed; it waits until
// the cache is ready and destroys it at cleanup.
func buildCache(t *testing.T, dec generic.StorageDecorator, cfg *storagebackend.Config, resource string) (*watchcache.Cache, func()) {
	t.Helper()
	s, destroy, err := decorate(dec, cfg, resource)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(destroy)
	c := s.(*watchcache.Cache)
	ctx, cancel := context.WithTimeout(context.Background(), longWait)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return c, destroy
}

// TestDecoratorSharesOneOracle: two resources decorated on one etcd share
// one revision oracle (and its client, dialled from the transport, with
// the version guard passing on a current etcd); destroying both releases
// it.
func TestDecoratorSharesOneOracle(t *testing.T) {
	_, cfg := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	cfg.Codec = cachetest.ProtoCodec
	reg := oracle.NewRegistry(oracle.Options{})
	// TimeoutReject: a read the cache cannot serve fails instead of falling
	// back to etcd, so a passing read was served from the cache.
	dec := watchcache.NewStorageDecorator(watchcache.DecoratorOptions{Options: watchcache.Options{ConsistentReadsFromCache: on(), TimeoutAction: watchcache.TimeoutReject}, OracleRegistry: reg})
	pods, destroyPods := buildCache(t, dec, cfg, "pods")
	leases, destroyLeases := buildCache(t, dec, cfg, "leases")
	if n := reg.Len(); n != 1 {
		t.Fatalf("%d oracles for one etcd, want 1", n)
	}
	create(t, pods, "ns", "a", "")
	for prefix, c := range map[string]*watchcache.Cache{"/pods/": pods, "/leases/": leases} {
		l := &example.PodList{}
		if err := c.GetList(context.Background(), prefix, listOpts(""), l); err != nil {
			t.Fatal(err)
		}
		if s := c.FreshnessStatus(); s.Fetch == 0 {
			t.Fatalf("consistent LIST was not served through the oracle: %+v", s)
		}
		if want := prefix == "/pods/"; names(l)["a"] != want {
			t.Fatalf("consistent LIST of %s: %v, want pod a listed: %v", prefix, names(l), want)
		}
	}
	destroyPods()
	if n := reg.Len(); n != 1 {
		t.Fatalf("oracle released while leases still use it (%d)", n)
	}
	destroyLeases()
	if n := reg.Len(); n != 0 {
		t.Fatalf("%d oracles left after destroying every cache", n)
	}
}

// TestDecoratorDialOracle: Options.DialOracle makes the oracle's client,
// once per cluster, for the cluster's transport. With etcd's in-process
// client (no gRPC on either side) consistent reads still go through the
// oracle and see a write acknowledged just before them. A dial error fails
// the decorator with that error.
func TestDecoratorDialOracle(t *testing.T) {
	e, _ := etcdcluster.StartSingle(t)
	endpoint := etcdcluster.ClientURL(e)
	cfg := &storagebackend.Config{
		Type:      "etcd3",
		Prefix:    "/registry",
		Codec:     cachetest.ProtoCodec,
		Transport: storagebackend.TransportConfig{ServerList: []string{endpoint}},
	}
	var dials atomic.Int32
	reg := oracle.NewRegistry(oracle.Options{})
	dec := watchcache.NewStorageDecorator(watchcache.DecoratorOptions{
		Options: watchcache.Options{
			ConsistentReadsFromCache: on(),
			TimeoutAction:            watchcache.TimeoutReject, // served from the cache, or an error
		},
		OracleRegistry: reg,
		DialOracle: func(tc storagebackend.TransportConfig) (*clientv3.Client, error) {
			dials.Add(1)
			if !slices.Equal(tc.ServerList, []string{endpoint}) {
				return nil, fmt.Errorf("dialled for %v, want %s", tc.ServerList, endpoint)
			}
			return v3client.New(e.Server), nil
		},
	})
	pods, _ := buildCache(t, dec, cfg, "pods")
	leases, _ := buildCache(t, dec, cfg, "leases")
	if n := dials.Load(); n != 1 || reg.Len() != 1 {
		t.Fatalf("%d dials and %d oracles for one etcd, want 1 and 1", n, reg.Len())
	}
	for i := range 5 {
		p := create(t, pods, "ns", fmt.Sprintf("p%d", i), "")
		got := &example.Pod{}
		if err := pods.Get(context.Background(), cachetest.PodKey(p), storage.GetOptions{}, got); err != nil {
			t.Fatalf("consistent GET right after the create: %v", err)
		}
		if got.ResourceVersion != p.ResourceVersion {
			t.Fatalf("consistent GET returned rv %s, the create was acknowledged at %s", got.ResourceVersion, p.ResourceVersion)
		}
	}
	if err := leases.GetList(context.Background(), "/leases/", listOpts(""), &example.PodList{}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*watchcache.Cache{"pods": pods, "leases": leases} {
		if s := c.FreshnessStatus(); s.Fetch == 0 {
			t.Errorf("%s: consistent reads were not served through the oracle: %+v", name, s)
		}
	}

	failing := watchcache.NewStorageDecorator(watchcache.DecoratorOptions{
		Options:        watchcache.Options{ConsistentReadsFromCache: on()},
		OracleRegistry: oracle.NewRegistry(oracle.Options{}),
		DialOracle: func(storagebackend.TransportConfig) (*clientv3.Client, error) {
			return nil, errors.New("no etcd here")
		},
	})
	if _, _, err := decorate(failing, cfg, "pods"); err == nil || !strings.Contains(err.Error(), "no etcd here") {
		t.Fatalf("decorator with a failing DialOracle: err %v, want the dial error", err)
	}
}
