package watchcache_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/freshcache/watchcache"
)

// A server built on k8s.io/apiserver installs freshcache with one storage
// decorator (this example imports only public packages), where it would have used upstream's
// genericregistry.StorageWithCacher(). A write acknowledged before a
// consistent LIST is in the LIST, served from the cache.
func ExampleNewStorageDecorator() {
	endpoint, stop, err := exampleEtcd()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	// The example API's pods, stored as example/v1 JSON.
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	codec := serializer.NewCodecFactory(scheme).LegacyCodec(examplev1.SchemeGroupVersion)
	podAttrs := func(obj runtime.Object) (labels.Set, fields.Set, error) {
		pod := obj.(*example.Pod)
		return labels.Set(pod.Labels), fields.Set{"metadata.name": pod.Name, "metadata.namespace": pod.Namespace, "spec.nodeName": pod.Spec.NodeName}, nil
	}

	decorator := watchcache.NewStorageDecorator(watchcache.DecoratorOptions{})
	cfg := storagebackend.Config{
		Type:      storagebackend.StorageTypeETCD3,
		Prefix:    "/registry",
		Codec:     codec,
		Transport: storagebackend.TransportConfig{ServerList: []string{endpoint}},
	}
	pods, destroy, err := decorator(cfg.ForResource(schema.GroupResource{Resource: "pods"}), "/pods",
		func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc("/pods/", obj) },
		func() runtime.Object { return &example.Pod{} }, func() runtime.Object { return &example.PodList{} },
		podAttrs, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer destroy()

	ctx := context.Background()
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}, Spec: example.PodSpec{NodeName: "node-1"}}
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
