package watchcache_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/cachetest"
	"github.com/freshcache/watchcache/oracle"
)

// TestDecoratorSharesOneOracle: two resources decorated on one etcd share
// one revision oracle (and its client, dialled from the transport, with
// the version guard passing on a current etcd); destroying both releases
// it.
func TestDecoratorSharesOneOracle(t *testing.T) {
	_, cfg := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	cfg.Codec = cachetest.ProtoCodec
	reg := oracle.NewRegistry(oracle.Options{})
	dec := watchcache.NewStorageDecorator(watchcache.Options{ConsistentReadsFromCache: on(), OracleRegistry: reg})
	build := func(resource string) (*watchcache.Cache, func()) {
		rc := cfg.ForResource(schema.GroupResource{Resource: resource})
		s, destroy, err := dec(rc, "/"+resource, func(obj runtime.Object) (string, error) {
			return storage.NamespaceKeyFunc("/"+resource, obj)
		}, cachetest.NewPod, cachetest.NewPodList, cachetest.PodAttrs, nil, nil)
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
	pods, destroyPods := build("pods")
	leases, destroyLeases := build("leases")
	if n := reg.Len(); n != 1 {
		t.Fatalf("%d oracles for one etcd, want 1", n)
	}
	create(t, pods, "ns", "a", "")
	for prefix, c := range map[string]*watchcache.Cache{"/pods/": pods, "/leases/": leases} {
		if err := c.GetList(context.Background(), prefix, listOpts(""), &example.PodList{}); err != nil {
			t.Fatal(err)
		}
		if s := c.FreshnessStatus(); s.Fetch == 0 {
			t.Fatalf("consistent LIST was not served through the oracle: %+v", s)
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
