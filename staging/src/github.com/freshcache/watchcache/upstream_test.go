package watchcache_test

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/kubernetes"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// startUpstream builds upstream's watch cache (k8s.io/apiserver's
// cacher.Cacher behind its CacheDelegator, as genericregistry wires it) for
// the example pods, over an etcd3 store whose client is the given one, e.g.
// a client pinned to one member of a cachetest.Cluster. It has the same
// prefix, codec, attributes and spec.nodeName index as the caches that
// cachetest.StartOn(..., cachetest.NodeNameAndNamespaceIndex) builds, so
// both answer the same requests. It waits until the cacher is ready;
// Cleanup stops it.
//
// It exists for contrasts: reads that freshcache must never answer stale,
// run through upstream, show that the scenario really is stale.
func startUpstream(t *testing.T, client *kubernetes.Client) storage.Interface {
	t.Helper()
	const prefix = "/pods/"
	gr := schema.GroupResource{Resource: "pods"}
	versioner := storage.APIObjectVersioner{}
	compactor := etcd3.NewCompactor(client.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	etcdStore, err := etcd3.New(client, compactor, cachetest.ProtoCodec, cachetest.NewPod, cachetest.NewPodList,
		etcd3testing.PathPrefix(), prefix, gr, identity.NewEncryptCheckTransformer(),
		etcd3.NewDefaultLeaseManagerConfig(), etcd3.NewDefaultDecoder(cachetest.ProtoCodec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcdStore.Close)

	// The pod registry's trigger and indexes, taken from the Setup that
	// cachetest applies to freshcache, so that LIST-by-node is indexed in
	// both caches.
	var s cachetest.Setup
	cachetest.NodeNameAndNamespaceIndex(&s)
	c, err := cacher.NewCacherFromConfig(cacher.Config{
		Storage:             etcdStore,
		Versioner:           versioner,
		GroupResource:       gr,
		EventsHistoryWindow: cacher.DefaultEventFreshDuration,
		ResourcePrefix:      prefix,
		KeyFunc:             func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(prefix, obj) },
		GetAttrsFunc:        cachetest.PodAttrs,
		IndexerFuncs:        s.IndexerFuncs,
		Indexers:            &s.Indexers,
		NewFunc:             cachetest.NewPod,
		NewListFunc:         cachetest.NewPodList,
		Codec:               cachetest.ProtoCodec,
		Clock:               clock.RealClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := cacher.NewCacheDelegator(c, etcdStore)
	// Stop order as upstream's registry: the delegator, then the cacher.
	t.Cleanup(c.Stop)
	t.Cleanup(d.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), longWait)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatalf("upstream cacher not ready: %v", err)
	}
	return d
}

// upstreamReadTimeout bounds one read through upstream's cacher in the
// contrasts; a read from its cache answers at once.
const upstreamReadTimeout = 10 * time.Second
