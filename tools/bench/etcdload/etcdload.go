package etcdload

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serveroptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/kubernetes/pkg/kubeapiserver"

	// The storage factory encodes through legacyscheme. The core group is
	// installed here; a caller writing another group installs it.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// Prefix is kube-apiserver's default etcd key prefix (--etcd-prefix).
const Prefix = "/registry"

// Options say which etcd a Writer writes to, and what.
type Options struct {
	// Endpoint is etcd's client URL.
	Endpoint string
	// Resources are the resources the Writer encodes, each as
	// kube-apiserver's storage factory configures it. A group other than
	// core must be installed in legacyscheme by the caller (import
	// k8s.io/kubernetes/pkg/apis/GROUP/install).
	Resources []schema.GroupResource
}

// Writer writes objects straight to one etcd in kube-apiserver's storage
// encoding. It is safe for concurrent use.
type Writer struct {
	client  *clientv3.Client
	configs map[schema.GroupResource]*storagebackend.ConfigForResource
}

// New builds kube-apiserver's storage configuration of every resource in
// o and connects to etcd.
func New(o Options) (*Writer, error) {
	sc := storagebackend.NewDefaultConfig(Prefix, nil)
	sc.Transport.ServerList = []string{o.Endpoint}
	// No compaction: a storage built from Config would otherwise add etcd
	// work at a random point of a run.
	sc.CompactionInterval = 0
	opts := serveroptions.NewEtcdOptions(sc)
	// kube-apiserver stores core objects as protobuf.
	opts.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	completed := kubeapiserver.NewStorageFactoryConfig().Complete(opts)
	completed.APIResourceConfig = serverstorage.NewResourceConfig()
	factory, err := completed.New()
	if err != nil {
		return nil, fmt.Errorf("storage factory: %w", err)
	}
	w := &Writer{configs: map[schema.GroupResource]*storagebackend.ConfigForResource{}}
	for _, gr := range o.Resources {
		if w.configs[gr], err = factory.NewConfig(gr, nil); err != nil {
			return nil, fmt.Errorf("%s storage config: %w", gr, err)
		}
	}
	w.client, err = clientv3.New(clientv3.Config{
		Endpoints: []string{o.Endpoint}, DialTimeout: 10 * time.Second,
		// Writers stop by cancelling their Puts in flight, and a stalled
		// etcd cuts others; the client would log every one of them.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return w, nil
}

// Close closes the etcd client.
func (w *Writer) Close() error { return w.client.Close() }

// Config returns a copy of gr's storage configuration, as
// kube-apiserver's storage factory builds it (for a storage of one's own
// on the same etcd); nil when gr is not among Options.Resources.
func (w *Writer) Config(gr schema.GroupResource) *storagebackend.ConfigForResource {
	c, ok := w.configs[gr]
	if !ok {
		return nil
	}
	cp := *c
	return &cp
}

// Key is where kube-apiserver keeps object namespace/name of gr.
func Key(gr schema.GroupResource, namespace, name string) string {
	return Prefix + "/" + gr.Resource + "/" + namespace + "/" + name
}

// Put writes obj, encoded as kube-apiserver stores gr, at Key(gr,
// namespace, name), and returns the etcd revision of the write.
func (w *Writer) Put(ctx context.Context, gr schema.GroupResource, namespace, name string, obj runtime.Object) (int64, error) {
	c, ok := w.configs[gr]
	if !ok {
		return 0, fmt.Errorf("writing %s %s/%s: not among the writer's resources", gr.Resource, namespace, name)
	}
	data, err := runtime.Encode(c.Codec, obj)
	if err != nil {
		return 0, fmt.Errorf("encoding %s %s/%s: %w", gr.Resource, namespace, name, err)
	}
	resp, err := w.client.Put(ctx, Key(gr, namespace, name), string(data))
	if err != nil {
		return 0, fmt.Errorf("writing %s %s/%s: %w", gr.Resource, namespace, name, err)
	}
	return resp.Header.Revision, nil
}

// Revision asks etcd for its current revision (a linearizable read).
func (w *Writer) Revision(ctx context.Context) (int64, error) {
	// A count of one key is the cheapest read that carries the revision.
	resp, err := w.client.Get(ctx, "/bench-rev", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}
