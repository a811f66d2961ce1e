package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	// The storage factory encodes through legacyscheme; etcdload installs
	// the core group, this the other group the harness stores.
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"

	"github.com/freshcache/freshcache/lab/pkg/etcdlocal"
	"github.com/freshcache/freshcache/tools/bench/etcdload"
)

const leaseNamespace = "kube-node-lease"

var (
	podsGR   = schema.GroupResource{Resource: "pods"}
	leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

// Env is one embedded etcd holding one data set, the storage configuration
// kube-apiserver would use for pods, and a writer (package etcdload) for
// the harness's own writes.
type Env struct {
	Shape    Shape
	Endpoint string

	cluster   *etcdlocal.Cluster
	writer    *etcdload.Writer
	podConfig *storagebackend.ConfigForResource
	podCodec  runtime.Codec

	// lastRev is the newest etcd revision a harness write produced; rv=N
	// scenarios read it.
	lastRev atomic.Int64
	podGen  atomic.Int64
}

// StartEnv starts an embedded etcd in dataDir and loads the shape into it:
// every pod and one lease per node.
func StartEnv(ctx context.Context, dataDir string, shape Shape) (*Env, error) {
	shape = shape.WithDefaults()
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
	e := &Env{Shape: shape.WithDefaults(), Endpoint: endpoint}
	if err := e.init(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Env) init(ctx context.Context) error {
	var err error
	if e.writer, err = etcdload.New(etcdload.Options{Endpoint: e.Endpoint, Resources: []schema.GroupResource{podsGR, leasesGR}}); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	e.podConfig = e.writer.Config(podsGR)
	e.podCodec = e.podConfig.Codec
	return e.load(ctx)
}

// load writes every pod and lease with 16 concurrent writers.
func (e *Env) load(ctx context.Context) error {
	return etcdload.Load(ctx, e.Shape.Pods+e.Shape.Nodes, 16, func(ctx context.Context, i int) error {
		if i < e.Shape.Pods {
			return e.PutPod(ctx, i, 0)
		}
		return e.putLease(ctx, i-e.Shape.Pods)
	})
}

// Close stops the etcd client, and the server if StartEnv started it.
func (e *Env) Close() {
	if e.writer != nil {
		_ = e.writer.Close()
	}
	if e.cluster != nil {
		e.cluster.Close()
	}
}

// podStorageConfig returns a copy of the pod storage configuration, as
// kube-apiserver's storage factory builds it.
func (e *Env) podStorageConfig() *storagebackend.ConfigForResource {
	c := *e.podConfig
	return &c
}

// lastRevision is the newest revision the harness wrote.
func (e *Env) lastRevision() int64 { return e.lastRev.Load() }

// currentRev asks etcd for its revision (a linearizable read) and records it.
func (e *Env) currentRev(ctx context.Context) (int64, error) {
	rev, err := e.writer.Revision(ctx)
	if err != nil {
		return 0, err
	}
	e.noteRev(rev)
	return rev, nil
}

func (e *Env) noteRev(rev int64) {
	for {
		cur := e.lastRev.Load()
		if rev <= cur || e.lastRev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// PutPod writes pod i straight to etcd in kube-apiserver's storage
// encoding, with written (Unix nanoseconds, when not zero) in
// AnnotationWritten. Writing around the registry keeps the writers' etcd
// traffic to Put requests, which the request counters leave out (see
// servermetrics.EtcdCounters).
func (e *Env) PutPod(ctx context.Context, i int, written int64) error {
	ns, name := e.Shape.PodKey(i)
	return e.put(ctx, podsGR, ns, name, e.Shape.pod(i, written, int(e.podGen.Add(1))))
}

func (e *Env) putLease(ctx context.Context, n int) error {
	l := e.Shape.lease(n, time.Now().UnixNano())
	return e.put(ctx, leasesGR, leaseNamespace, l.Name, l)
}

func (e *Env) put(ctx context.Context, gr schema.GroupResource, ns, name string, obj runtime.Object) error {
	rev, err := e.writer.Put(ctx, gr, ns, name, obj)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	e.noteRev(rev)
	return nil
}

func intOrStr(p int32) intstr.IntOrString { return intstr.FromInt32(p) }

func timeFromNanos(n int64) time.Time { return time.Unix(0, n) }
