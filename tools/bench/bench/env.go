package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	serveroptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/kubernetes/pkg/kubeapiserver"

	// The storage factory encodes through legacyscheme; these install the
	// two groups the harness stores.
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"

	"github.com/freshcache/freshcache/pkg/etcdlocal"
)

const (
	etcdPrefix     = "/registry"
	leaseNamespace = "kube-node-lease"
)

var (
	podsGR   = schema.GroupResource{Resource: "pods"}
	leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

// Env is one embedded etcd holding one data set, the storage configuration
// kube-apiserver would use for pods, and a raw etcd client for the
// harness's own writes.
type Env struct {
	Shape    Shape
	Endpoint string

	cluster   *etcdlocal.Cluster
	client    *clientv3.Client
	podConfig *storagebackend.ConfigForResource
	podCodec  runtime.Codec
	leaseCdc  runtime.Codec

	// lastRev is the newest etcd revision a harness write produced; rv=N
	// scenarios read it.
	lastRev atomic.Int64
	podGen  atomic.Int64
}

// StartEnv starts an embedded etcd in dataDir and loads the shape into it:
// every pod and one lease per node.
func StartEnv(ctx context.Context, dataDir string, shape Shape) (*Env, error) {
	shape = shape.withDefaults()
	cluster, err := etcdlocal.Start(ctx, etcdlocal.Options{DataDir: dataDir, UnsafeNoFsync: true})
	if err != nil {
		return nil, err
	}
	e := &Env{Shape: shape, cluster: cluster, Endpoint: cluster.Endpoints()[0]}
	if err := e.init(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// AttachEnv loads the shape into an etcd that is already running at
// endpoint (the through-kube-apiserver benchmark uses local-up's). Close
// leaves that etcd running.
func AttachEnv(ctx context.Context, endpoint string, shape Shape) (*Env, error) {
	e := &Env{Shape: shape.withDefaults(), Endpoint: endpoint}
	if err := e.init(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Env) init(ctx context.Context) error {
	cfg := storagebackend.NewDefaultConfig(etcdPrefix, nil)
	cfg.Transport.ServerList = []string{e.Endpoint}
	// No compaction during a run: it would add etcd work at a random point
	// of one backend's rows and not the others'.
	cfg.CompactionInterval = 0
	opts := serveroptions.NewEtcdOptions(cfg)
	// kube-apiserver stores core objects as protobuf.
	opts.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	completed := kubeapiserver.NewStorageFactoryConfig().Complete(opts)
	completed.APIResourceConfig = serverstorage.NewResourceConfig()
	factory, err := completed.New()
	if err != nil {
		return fmt.Errorf("bench: storage factory: %w", err)
	}
	if e.podConfig, err = factory.NewConfig(podsGR, nil); err != nil {
		return fmt.Errorf("bench: pod storage config: %w", err)
	}
	leaseConfig, err := factory.NewConfig(leasesGR, nil)
	if err != nil {
		return fmt.Errorf("bench: lease storage config: %w", err)
	}
	e.podCodec, e.leaseCdc = e.podConfig.Codec, leaseConfig.Codec

	e.client, err = clientv3.New(clientv3.Config{
		Endpoints: []string{e.Endpoint}, DialTimeout: 10 * time.Second,
		// Writers stop by cancelling in-flight Puts; the client would log
		// every one of them.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("bench: etcd client: %w", err)
	}
	return e.load(ctx)
}

// load writes every pod and lease with 16 concurrent writers.
func (e *Env) load(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	next := atomic.Int64{}
	for range 16 {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				switch {
				case i < e.Shape.Pods:
					if err := e.putPod(gctx, i, 0); err != nil {
						return err
					}
				case i < e.Shape.Pods+e.Shape.Nodes:
					if err := e.putLease(gctx, i-e.Shape.Pods); err != nil {
						return err
					}
				default:
					return nil
				}
			}
		})
	}
	return g.Wait()
}

// Close stops the etcd client, and the server if StartEnv started it.
func (e *Env) Close() {
	if e.client != nil {
		_ = e.client.Close()
	}
	if e.cluster != nil {
		e.cluster.Close()
	}
}

// PodConfig returns a copy of the pod storage configuration, as
// kube-apiserver's storage factory builds it.
func (e *Env) PodConfig() *storagebackend.ConfigForResource {
	c := *e.podConfig
	return &c
}

// LastRev is the newest revision the harness wrote.
func (e *Env) LastRev() int64 { return e.lastRev.Load() }

// CurrentRev asks etcd for its revision (a linearizable read) and records it.
func (e *Env) CurrentRev(ctx context.Context) (int64, error) {
	resp, err := e.client.Get(ctx, "/bench-rev", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	e.noteRev(resp.Header.Revision)
	return resp.Header.Revision, nil
}

func (e *Env) noteRev(rev int64) {
	for {
		cur := e.lastRev.Load()
		if rev <= cur || e.lastRev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// putPod writes pod i straight to etcd in kube-apiserver's storage
// encoding. Writing around the registry keeps the writers' etcd traffic to
// Put requests, which the request counters leave out (see EtcdCounters).
func (e *Env) putPod(ctx context.Context, i int, written int64) error {
	ns, name := e.Shape.podKey(i)
	data, err := runtime.Encode(e.podCodec, e.Shape.Pod(i, written, int(e.podGen.Add(1))))
	if err != nil {
		return fmt.Errorf("bench: encoding pod: %w", err)
	}
	resp, err := e.client.Put(ctx, etcdPrefix+"/pods/"+ns+"/"+name, string(data))
	if err != nil {
		return fmt.Errorf("bench: writing pod %s/%s: %w", ns, name, err)
	}
	e.noteRev(resp.Header.Revision)
	return nil
}

func (e *Env) putLease(ctx context.Context, n int) error {
	l := e.Shape.Lease(n, time.Now().UnixNano())
	data, err := runtime.Encode(e.leaseCdc, l)
	if err != nil {
		return fmt.Errorf("bench: encoding lease: %w", err)
	}
	resp, err := e.client.Put(ctx, etcdPrefix+"/leases/"+leaseNamespace+"/"+l.Name, string(data))
	if err != nil {
		return fmt.Errorf("bench: writing lease %s: %w", l.Name, err)
	}
	e.noteRev(resp.Header.Revision)
	return nil
}

// Load is the background write load of a row.
type Load struct {
	// PodWritesPerSec updates random pods (or, when PodTargets is set, pods
	// from that list), stamping AnnotationWritten.
	PodWritesPerSec float64 `json:"pod_writes_per_sec"`
	// LeaseWritesPerSec renews node leases: another resource, so the etcd
	// revision moves without events for pods.
	LeaseWritesPerSec float64 `json:"lease_writes_per_sec"`
	// PodTargets restricts pod writes to these pod indexes.
	PodTargets []int `json:"-"`
}

// writers runs the load until stop is called; stop returns the number of
// pod writes done and the first write error.
type writers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pods   atomic.Int64
	mu     struct {
		sync.Mutex
		err error
	}
}

func (e *Env) startLoad(ctx context.Context, l Load) *writers {
	ctx, cancel := context.WithCancel(ctx)
	w := &writers{cancel: cancel}
	run := func(perSec float64, write func(r *rand.Rand) error) {
		if perSec <= 0 {
			return
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			lim := rate.NewLimiter(rate.Limit(perSec), 1)
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			for lim.Wait(ctx) == nil {
				if err := write(r); err != nil && ctx.Err() == nil {
					w.mu.Lock()
					if w.mu.err == nil {
						w.mu.err = err
					}
					w.mu.Unlock()
				}
			}
		}()
	}
	run(l.PodWritesPerSec, func(r *rand.Rand) error {
		i := r.IntN(e.Shape.Pods)
		if len(l.PodTargets) > 0 {
			i = l.PodTargets[r.IntN(len(l.PodTargets))]
		}
		err := e.putPod(ctx, i, time.Now().UnixNano())
		if err == nil {
			w.pods.Add(1)
		}
		return err
	})
	run(l.LeaseWritesPerSec, func(r *rand.Rand) error {
		return e.putLease(ctx, r.IntN(e.Shape.Nodes))
	})
	return w
}

func (w *writers) stop() (int64, error) {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(w.mu.err, context.Canceled) {
		return w.pods.Load(), nil
	}
	return w.pods.Load(), w.mu.err
}

func intOrStr(p int32) intstr.IntOrString { return intstr.FromInt32(p) }

func timeFromNanos(n int64) time.Time { return time.Unix(0, n) }
