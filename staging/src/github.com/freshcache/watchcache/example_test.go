package watchcache_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// A server built on k8s.io/apiserver installs freshcache with one storage
// decorator, where it would have used upstream's
// genericregistry.StorageWithCacher(). A write acknowledged before a
// consistent LIST is in the LIST, served from the cache.
func ExampleNewStorageDecorator() {
	endpoint, stop, err := exampleEtcd()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	decorator := watchcache.NewStorageDecorator(watchcache.DecoratorOptions{})
	cfg := storagebackend.Config{
		Type:      storagebackend.StorageTypeETCD3,
		Prefix:    "/registry",
		Codec:     cachetest.ProtoCodec,
		Transport: storagebackend.TransportConfig{ServerList: []string{endpoint}},
	}
	pods, destroy, err := decorator(cfg.ForResource(schema.GroupResource{Resource: "pods"}), "/pods",
		func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc("/pods/", obj) },
		cachetest.NewPod, cachetest.NewPodList, cachetest.PodAttrs, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer destroy()

	ctx := context.Background()
	pod := mkPod("default", "web-0", "node-1")
	if err := pods.Create(ctx, "/pods/default/web-0", pod, &example.Pod{}, 0); err != nil {
		fmt.Println(err)
		return
	}
	// Until its first list is in, the cache answers LISTs with 429, as
	// upstream's cacher does; wait for it here instead of retrying.
	if err := pods.(*watchcache.Cache).Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// resourceVersion "": a consistent read, served from the cache once it
	// is at least as fresh as etcd was when the LIST arrived.
	list := &example.PodList{}
	if err := pods.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range list.Items {
		fmt.Println(p.Namespace + "/" + p.Name)
	}
	// Output:
	// default/web-0
}

// exampleEtcd starts a one-member embedded etcd on loopback.
func exampleEtcd() (endpoint string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "freshcache-example")
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Port 0: etcd binds a port the kernel picks; e.Clients says which.
	anyPort := []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = anyPort, anyPort
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = anyPort, anyPort
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("embedded etcd not ready")
	}
	return "http://" + e.Clients[0].Addr().String(), func() { e.Close(); _ = os.RemoveAll(dir) }, nil
}
