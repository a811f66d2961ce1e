package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// prefix is the resource prefix of the pods, as in internal/cachetest.
const prefix = "/pods/"

// shape is the data set: pods spread round-robin over nodes and namespaces.
type shape struct {
	pods, nodes, namespaces int
}

func (s shape) node(i int) string      { return fmt.Sprintf("node-%03d", i%s.nodes) }
func (s shape) namespace(i int) string { return fmt.Sprintf("ns-%02d", i%s.namespaces) }

// world is one embedded etcd holding the pods. Caches are built over it one
// at a time.
type world struct {
	shape shape
	// store writes the pods. Each cache gets its own etcd3 store over the
	// same etcd client from newStore, as each storage decorator call does.
	store    storage.Interface
	newStore func() (storage.Interface, func())
	// pods are the pods as written, with their resource versions; writers
	// pass them to GuaranteedUpdate as the suggestion.
	mu   sync.Mutex
	pods map[string]*example.Pod // key -> latest written version
	keys []string                // index i -> key of pod i
	// seq makes every update change the pod: etcd3 skips no-op updates.
	seq atomic.Int64
}

func newWorld(tb testing.TB, sh shape) *world {
	tb.Helper()
	server, _ := etcd3testing.NewUnsecuredEtcd3TestClientServer(tb)
	compactor := etcd3.NewCompactor(server.V3Client.Client, 0, clock.RealClock{}, nil)
	tb.Cleanup(compactor.Stop)
	w := &world{shape: sh, pods: make(map[string]*example.Pod, sh.pods), keys: make([]string, sh.pods)}
	w.newStore = func() (storage.Interface, func()) {
		versioner := storage.APIObjectVersioner{}
		st, err := etcd3.New(server.V3Client, compactor, cachetest.ProtoCodec, cachetest.NewPod, cachetest.NewPodList,
			etcd3testing.PathPrefix(), prefix, schema.GroupResource{Resource: "pods"}, identity.NewEncryptCheckTransformer(),
			etcd3.NewDefaultLeaseManagerConfig(), etcd3.NewDefaultDecoder(cachetest.ProtoCodec, versioner), versioner)
		if err != nil {
			tb.Fatal(err)
		}
		return st, st.Close
	}
	var closeStore func()
	w.store, closeStore = w.newStore()
	tb.Cleanup(closeStore)
	if err := w.populate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return w
}

// makePod returns pod i, about 2 KiB once encoded: labels, annotations, a
// node selector, owner references, status conditions, as a scheduled pod of
// a Deployment carries.
func (s shape) makePod(i int) *example.Pod {
	ns, name := s.namespace(i), fmt.Sprintf("pod-%06d", i)
	app := fmt.Sprintf("app-%03d", i%97)
	grace, deadline := int64(30), int64(3600)
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cond := func(t string) example.PodCondition {
		return example.PodCondition{
			Type: example.PodConditionType(t), Status: "True",
			LastProbeTime: now, LastTransitionTime: now,
			Reason:  "ContainersReady",
			Message: "all containers of the pod are ready and have passed their readiness probes",
		}
	}
	return &example.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    ns,
			Name:         name,
			GenerateName: app + "-7d9c8b5f4-",
			UID:          types.UID(fmt.Sprintf("6f1c2d3e-%04x-4a5b-8c9d-%012x", i%0xffff, i)),
			Labels: map[string]string{
				"app.kubernetes.io/name":      app,
				"app.kubernetes.io/instance":  app + "-prod",
				"app.kubernetes.io/component": "backend",
				"app.kubernetes.io/part-of":   "shop",
				"pod-template-hash":           "7d9c8b5f4",
				"tier":                        []string{"web", "api", "worker", "cache"}[i%4],
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:04:05Z",
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "9090",
				"bench/config":                      strings.Repeat(fmt.Sprintf("%s-config-%06d;", app, i), 18),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9c8b5f4",
				UID: types.UID(fmt.Sprintf("0a1b2c3d-%04x-4e5f-9a8b-7c6d5e4f3a2b", i%97)),
			}},
			Finalizers:        []string{"bench.freshcache.io/protect"},
			CreationTimestamp: now,
		},
		Spec: example.PodSpec{
			RestartPolicy:                 "Always",
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &deadline,
			NodeSelector: map[string]string{
				"kubernetes.io/os":                 "linux",
				"node.kubernetes.io/instance-type": "m5.xlarge",
				"topology.kubernetes.io/zone":      []string{"zone-a", "zone-b", "zone-c"}[i%3],
			},
			ServiceAccountName: app,
			NodeName:           s.node(i),
			Hostname:           name,
			Subdomain:          app,
			SchedulerName:      "default-scheduler",
		},
		Status: example.PodStatus{
			Phase:      "Running",
			Conditions: []example.PodCondition{cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")},
			Message:    "pod is running",
			Reason:     "Started",
			HostIP:     fmt.Sprintf("10.0.%d.%d", (i%s.nodes)/250, (i%s.nodes)%250+1),
			PodIP:      fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256),
			StartTime:  &now,
		},
	}
}

// encodedSize is the protobuf size of pod i as stored in etcd.
func (s shape) encodedSize(i int) int {
	b, err := runtime.Encode(cachetest.ProtoCodec, s.makePod(i))
	if err != nil {
		return -1
	}
	return len(b)
}

func (w *world) populate(ctx context.Context) error {
	const workers = 32
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := w.shape.makePod(i)
				key := cachetest.PodKey(p)
				out := &example.Pod{}
				if err := w.store.Create(ctx, key, p, out, 0); err != nil {
					errs <- fmt.Errorf("create %s: %w", key, err)
					return
				}
				w.mu.Lock()
				w.pods[key] = out
				w.keys[i] = key
				w.mu.Unlock()
			}
		}()
	}
	var err error
feed:
	for i := 0; i < w.shape.pods; i++ {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

// update changes an annotation of pod i (its node stays) and returns the
// revision written.
func (w *world) update(ctx context.Context, i int) error {
	seq := w.seq.Add(1)
	key := w.keys[i%len(w.keys)]
	w.mu.Lock()
	cur := w.pods[key]
	w.mu.Unlock()
	out := &example.Pod{}
	err := w.store.GuaranteedUpdate(ctx, key, out, false, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		p := in.(*example.Pod).DeepCopy()
		p.Annotations["bench/seq"] = fmt.Sprint(seq)
		return p, nil, nil
	}, cur)
	if err != nil {
		return fmt.Errorf("update %s: %w", key, err)
	}
	if out.ResourceVersion == cur.ResourceVersion {
		return fmt.Errorf("update %s: nothing written", key)
	}
	w.mu.Lock()
	w.pods[key] = out
	w.mu.Unlock()
	return nil
}

// currentRV is etcd's revision now.
func (w *world) currentRV(ctx context.Context) (uint64, error) {
	rv, err := w.store.GetCurrentResourceVersion(ctx)
	return rv, err
}

// impl names a cache implementation and builds it over the world's store.
type impl struct {
	name  string
	build func(tb testing.TB, w *world) (storage.Interface, func())
}

var impls = []impl{
	{"upstream", buildUpstream},
	{"freshcache", buildFreshcache},
}

// indexSetup is the pod registry's trigger and indexes, shared by both.
func indexSetup() cachetest.Setup {
	var s cachetest.Setup
	cachetest.NodeNameAndNamespaceIndex(&s)
	return s
}

func keyFunc(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(prefix, obj) }

// buildFreshcache builds freshcache as NewStorageDecorator would, with
// rv=0 served from the cache as it is (FreshResourceVersionZero off, its
// default), and waits until it is ready.
func buildFreshcache(tb testing.TB, w *world) (storage.Interface, func()) {
	tb.Helper()
	s := indexSetup()
	st, closeStore := w.newStore()
	off := false
	c, err := watchcache.New(watchcache.Options{
		FreshResourceVersionZero: &off,
		Metrics:                  func(schema.GroupResource) metrics.Recorder { return metrics.Discard{} },
	}, watchcache.Config{
		Storage:        st,
		Versioner:      storage.APIObjectVersioner{},
		GroupResource:  schema.GroupResource{Resource: "pods"},
		ResourcePrefix: prefix,
		KeyFunc:        keyFunc,
		NewFunc:        cachetest.NewPod,
		NewListFunc:    cachetest.NewPodList,
		GetAttrsFunc:   cachetest.PodAttrs,
		IndexerFuncs:   s.IndexerFuncs,
		Indexers:       &s.Indexers,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		c.Stop()
		closeStore()
		tb.Fatalf("freshcache not ready: %v", err)
	}
	return c, func() { c.Stop(); closeStore() }
}

// buildUpstream builds upstream's cacher as genericregistry's
// StorageWithCacher does (cacher + delegator) and waits until it is ready.
func buildUpstream(tb testing.TB, w *world) (storage.Interface, func()) {
	tb.Helper()
	s := indexSetup()
	st, closeStore := w.newStore()
	c, err := cacher.NewCacherFromConfig(cacher.Config{
		Storage:             st,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       schema.GroupResource{Resource: "pods"},
		EventsHistoryWindow: cacher.DefaultEventFreshDuration,
		ResourcePrefix:      prefix,
		KeyFunc:             keyFunc,
		GetAttrsFunc:        cachetest.PodAttrs,
		NewFunc:             cachetest.NewPod,
		NewListFunc:         cachetest.NewPodList,
		IndexerFuncs:        s.IndexerFuncs,
		Indexers:            &s.Indexers,
		Codec:               cachetest.ProtoCodec,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		c.Stop()
		closeStore()
		tb.Fatalf("upstream cacher not ready: %v", err)
	}
	d := cacher.NewCacheDelegator(c, st)
	return d, func() { d.Stop(); c.Stop(); closeStore() }
}

// nodePredicate selects the pods of one node through the spec.nodeName
// index, as the pod registry's field selector does.
func nodePredicate(node string) storage.SelectionPredicate {
	return storage.SelectionPredicate{
		Label:       labels.Everything(),
		Field:       fields.OneTermEqualSelector("spec.nodeName", node),
		GetAttrs:    cachetest.PodAttrs,
		IndexFields: []string{"spec.nodeName"},
	}
}

// listNode is one rv=0 LIST of the pods of node.
func listNode(ctx context.Context, s storage.Interface, node string) (*example.PodList, error) {
	list := &example.PodList{}
	err := s.GetList(ctx, prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: nodePredicate(node)}, list)
	return list, err
}
