package cachetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

var (
	// Scheme knows the example API group.
	Scheme = runtime.NewScheme()
	// Codecs is the codec factory of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ProtoCodec encodes example/v1 as protobuf, as upstream's tests do.
	ProtoCodec runtime.Codec
)

func init() {
	metav1.AddToGroupVersion(Scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(Scheme))
	utilruntime.Must(examplev1.AddToScheme(Scheme))
	pb := protobuf.NewSerializer(Scheme, Scheme)
	ProtoCodec = Codecs.CodecForVersions(pb, pb, schema.GroupVersions{examplev1.SchemeGroupVersion}, nil)
}

// NewPod returns an empty pod of the example API.
func NewPod() runtime.Object { return &example.Pod{} }

// NewPodList returns an empty pod list of the example API.
func NewPodList() runtime.Object { return &example.PodList{} }

// PodAttrs returns the labels and selectable fields of an example pod.
func PodAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*example.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return labels.Set(pod.Labels), fields.Set{
		"spec.nodeName":      pod.Spec.NodeName,
		"spec.restartPolicy": string(pod.Spec.RestartPolicy),
		"status.phase":       string(pod.Status.Phase),
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
	}, nil
}

// PodKey is the storage key of an example pod.
func PodKey(p *example.Pod) string { return fmt.Sprintf("/pods/%s/%s", p.Namespace, p.Name) }

// Setup configures Start.
type Setup struct {
	Prefix       string
	KeyFunc      func(runtime.Object) (string, error)
	IndexerFuncs storage.IndexerFuncs
	Indexers     cache.Indexers
	Codec        runtime.Codec
	Transformer  value.Transformer
	Options      watchcache.Options
	// Oracle, when set, is the cache's Oracle (Config.UseOracle).
	Oracle *oracle.Oracle
	// Source, when set, is Config.Oracle alone. With neither, the cache
	// builds its own.
	Source watchcache.RevisionSource
	// Recorder receives the cache's metrics; nil discards them.
	Recorder metrics.Recorder
	// Disabled is Config.ConsistentReadsDisabled.
	Disabled string
	// GroupResource defaults to pods.
	GroupResource schema.GroupResource
	// NoReadyWait makes StartOn return without waiting for the cache's
	// first list, e.g. on an etcd member that cannot serve it yet.
	NoReadyWait bool
	// Wrap, if set, wraps the storage the cache is given (the Gate over
	// the etcd3 store), e.g. to count or alter what the cache sees.
	Wrap func(storage.Interface) storage.Interface
}

// WithStorageWrapper puts wrap(storage) between the Gate and the cache.
func WithStorageWrapper(wrap func(storage.Interface) storage.Interface) Option {
	return func(s *Setup) { s.Wrap = wrap }
}

// NoReadyWait makes StartOn return a cache that may not be ready yet.
func NoReadyWait(s *Setup) { s.NoReadyWait = true }

// Option changes a Setup.
type Option func(*Setup)

// ClusterScoped keys pods without namespace.
func ClusterScoped(s *Setup) {
	s.KeyFunc = func(obj runtime.Object) (string, error) { return storage.NoNamespaceKeyFunc(s.Prefix, obj) }
}

// NodeNameAndNamespaceIndex mirrors the pod registry: a spec.nodeName
// trigger and indexes on spec.nodeName and metadata.namespace.
func NodeNameAndNamespaceIndex(s *Setup) {
	s.IndexerFuncs = storage.IndexerFuncs{
		"spec.nodeName": func(obj runtime.Object) string {
			if p, ok := obj.(*example.Pod); ok {
				return p.Spec.NodeName
			}
			return ""
		},
	}
	s.Indexers = cache.Indexers{
		"f:spec.nodeName": func(obj interface{}) ([]string, error) {
			return []string{obj.(*example.Pod).Spec.NodeName}, nil
		},
		"f:metadata.namespace": func(obj interface{}) ([]string, error) {
			return []string{obj.(*example.Pod).Namespace}, nil
		},
	}
}

// WithCodec replaces the store's codec.
func WithCodec(c runtime.Codec) Option { return func(s *Setup) { s.Codec = c } }

// WithTransformer replaces the store's value transformer.
func WithTransformer(tr value.Transformer) Option {
	return func(s *Setup) { s.Transformer = tr }
}

// WithOptions sets the cache's Options.
func WithOptions(o watchcache.Options) Option { return func(s *Setup) { s.Options = o } }

// WithOracle makes o the cache's revision source, the hearer of its
// writes and its ledger (Config.UseOracle).
func WithOracle(o *oracle.Oracle) Option { return func(s *Setup) { s.Oracle = o } }

// WithSource makes src the cache's revision source, with nothing hearing
// its writes and no ledger.
func WithSource(src watchcache.RevisionSource) Option { return func(s *Setup) { s.Source = src } }

// WithRecorder makes the cache record its metrics in r.
func WithRecorder(r metrics.Recorder) Option { return func(s *Setup) { s.Recorder = r } }

// WithPrefix stores the resource under prefix (e.g. "/leases/") with the
// given resource name.
func WithPrefix(prefix, resource string) Option {
	return func(s *Setup) {
		s.Prefix = prefix
		s.GroupResource = schema.GroupResource{Resource: resource}
	}
}

// WithConsistentReadsDisabled sets Config.ConsistentReadsDisabled.
func WithConsistentReadsDisabled(reason string) Option {
	return func(s *Setup) { s.Disabled = reason }
}

// Env is a running etcd, etcd3 store and cache.
type Env struct {
	Server   *etcd3testing.EtcdTestServer
	Client   *clientv3.Client
	Recorder *storagetesting.KubernetesRecorder
	// Etcd is the etcd3 store under the cache.
	Etcd storage.Interface
	// Gate sits between Etcd and the cache: it can hold back the cache's
	// watch and counts its progress requests.
	Gate  *Gate
	Cache *watchcache.Cache
}

// Start runs etcd, the store and a ready cache. Cleanup stops them.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	server, _ := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	e := StartOn(t, server.V3Client, opts...)
	e.Server = server
	return e
}

// StartOn builds the store and a ready cache on an existing client, e.g. a
// second resource on Start's etcd (env.Server.V3Client) or a client pinned
// to one member of a Cluster. Cleanup stops them; the client stays open.
func StartOn(t testing.TB, client *kubernetes.Client, opts ...Option) *Env {
	t.Helper()
	s := Setup{
		Prefix:        "/pods/",
		Codec:         ProtoCodec,
		Transformer:   identity.NewEncryptCheckTransformer(),
		GroupResource: schema.GroupResource{Resource: "pods"},
	}
	s.KeyFunc = func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(s.Prefix, obj) }
	for _, o := range opts {
		o(&s)
	}
	if s.Options.Metrics == nil {
		rec := s.Recorder
		if rec == nil {
			rec = metrics.Discard{}
		}
		s.Options.Metrics = func(schema.GroupResource) metrics.Recorder { return rec }
	}
	versioner := storage.APIObjectVersioner{}
	compactor := etcd3.NewCompactor(client.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	etcdStore, err := etcd3.New(client, compactor, s.Codec, NewPod, NewPodList,
		// As NewStorageDecorator does: the store's writes announce
		// themselves (RevisionsFromWrites) through the cache.
		etcd3testing.PathPrefix(), s.Prefix, s.GroupResource, watchcache.AnnounceWrites(s.Transformer),
		etcd3.NewDefaultLeaseManagerConfig(), etcd3.NewDefaultDecoder(s.Codec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcdStore.Close)
	var indexers *cache.Indexers
	if s.Indexers != nil {
		indexers = &s.Indexers
	}
	gate := NewGate(etcdStore)
	var under storage.Interface = gate
	if s.Wrap != nil {
		under = s.Wrap(gate)
	}
	cfg := watchcache.Config{
		Storage:                 under,
		Versioner:               versioner,
		GroupResource:           s.GroupResource,
		ResourcePrefix:          s.Prefix,
		KeyFunc:                 s.KeyFunc,
		NewFunc:                 NewPod,
		NewListFunc:             NewPodList,
		GetAttrsFunc:            PodAttrs,
		IndexerFuncs:            s.IndexerFuncs,
		Indexers:                indexers,
		Oracle:                  s.Source,
		ConsistentReadsDisabled: s.Disabled,
		StoragePrefix:           etcd3testing.PathPrefix(),
	}
	if s.Oracle != nil {
		cfg.UseOracle(s.Oracle)
	}
	c, err := watchcache.New(s.Options, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gate.Resume) // a paused watch must not block Stop
	t.Cleanup(c.Stop)
	if !s.NoReadyWait {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Wait(ctx); err != nil {
			t.Fatalf("cache not ready: %v", err)
		}
	}
	rec, _ := client.Kubernetes.(*storagetesting.KubernetesRecorder)
	return &Env{Client: client.Client, Recorder: rec, Etcd: etcdStore, Gate: gate, Cache: c}
}

// Compact compacts etcd at rv and waits until the store observes it.
func (e *Env) Compact(ctx context.Context, t *testing.T, rv string) {
	t.Helper()
	rev, err := storage.APIObjectVersioner{}.ParseResourceVersion(rv)
	if err != nil {
		t.Fatal(err)
	}
	var cur int64
	cur, _, _, err = etcd3.Compact(ctx, e.Client, cur, int64(rev))
	if err != nil {
		if _, _, _, err = etcd3.Compact(ctx, e.Client, cur, int64(rev)); err != nil {
			t.Fatal(err)
		}
	}
	if !utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot) {
		// Without the gate the etcd3 store observes no external compaction.
		return
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return e.Etcd.CompactRevision() >= int64(rev), nil
	})
	if err != nil {
		t.Fatalf("compaction at %d not observed (store at %d): %v", rev, e.Etcd.CompactRevision(), err)
	}
}

// increaseRVKey is the key IncreaseRV writes, outside every resource.
const increaseRVKey = "increaseRV"

// IncreaseRV writes a key outside the resource, advancing etcd's revision.
//
// It first waits (at most 3 s) for the cache to apply the newest write to
// its keys. freshcache applies a revision's events once a progress
// notification proves the revision complete, and asks etcd for one at
// once; a write that etcd serves before that request carries its own
// revision in the answer, and the cache moves past it. Upstream's suite
// (RunTestConsistentList) expects an rv=0 LIST right after IncreaseRV to
// be at most at the resource's last write: that holds for a cache that has
// not heard from etcd since, and freshcache may be fresher. Without the
// wait the test's outcome would depend on which of the two etcd serves
// first.
func (e *Env) IncreaseRV(ctx context.Context, t *testing.T) int64 {
	if last := e.lastResourceWrite(ctx, t); last > 0 {
		_ = wait.PollUntilContextTimeout(ctx, time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
			return e.Cache.RV() >= uint64(last), nil
		})
	}
	resp, err := e.Client.Put(ctx, increaseRVKey, "ok")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// lastResourceWrite is the newest modification revision of any key but
// IncreaseRV's own (the test resources share one etcd).
func (e *Env) lastResourceWrite(ctx context.Context, t *testing.T) int64 {
	resp, err := e.Client.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if string(kv.Key) != increaseRVKey {
			return kv.ModRevision
		}
	}
	return 0
}
