package storage

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"

	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	cachermetrics "k8s.io/apiserver/pkg/storage/cacher/metrics"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	podstorage "k8s.io/kubernetes/pkg/registry/core/pod/storage"

	"github.com/freshcache/freshcache/tools/bench/ctxsleep"
	"github.com/freshcache/watchcache"
)

// Backend names.
const (
	BackendEtcd       = "etcd"
	BackendUpstream   = "upstream"
	BackendFreshcache = "freshcache"
)

// AllBackends is the order in which a run measures them.
var AllBackends = []string{BackendEtcd, BackendUpstream, BackendFreshcache}

// decorator returns the generic.StorageDecorator of a backend: the one
// seam through which all three are built. fresh configures freshcache
// (the zero value: production defaults); the other backends ignore it.
func decorator(name string, fresh watchcache.DecoratorOptions) (generic.StorageDecorator, error) {
	if fresh.FreshResourceVersionZero == nil {
		// The rv=0 rows are the no-wait baseline that fresh reads are
		// measured against ("fresh LIST / rv=0") and the parity rows
		// against upstream's rv=0: rv=0 keeps upstream's meaning here,
		// although FreshResourceVersionZero is on by default.
		off := false
		fresh.FreshResourceVersionZero = &off
	}
	switch name {
	case BackendEtcd:
		return generic.UndecoratedStorage, nil
	case BackendUpstream:
		return genericregistry.StorageWithCacher(), nil
	case BackendFreshcache:
		// Feature gates left unset (all but FreshResourceVersionZero)
		// are read from k8s.io/apiserver's default gate, as in
		// kube-apiserver.
		return watchcache.NewStorageDecorator(fresh), nil
	default:
		return nil, fmt.Errorf("storage: unknown backend %q (want %s, %s or %s)", name, BackendEtcd, BackendUpstream, BackendFreshcache)
	}
}

// Config.OracleClient values.
const (
	OracleGRPC      = "grpc"
	OracleInProcess = "in-process"
)

// inProcessDial returns a DialOracle that hands freshcache's oracle etcd's
// in-process client on the embedded member, or an error if this Env is
// attached to an etcd it did not start.
func (e *Env) inProcessDial() (func(storagebackend.TransportConfig) (*clientv3.Client, error), error) {
	if e.cluster == nil {
		return nil, fmt.Errorf("storage: oracle client %q needs the embedded etcd, not an attached one", OracleInProcess)
	}
	srv := e.cluster.Members()[0].Server
	return func(storagebackend.TransportConfig) (*clientv3.Client, error) { return v3client.New(srv), nil }, nil
}

// podBackend is the real kube-apiserver pod registry on top of one backend.
type podBackend struct {
	name  string
	store *genericregistry.Store
}

// newPodBackend builds the pod REST storage kube-apiserver builds, with the
// backend's decorator, and waits until it is ready (a cache has finished
// its initial list).
// oracleClient is Config.OracleClient; it only changes freshcache.
func (e *Env) newPodBackend(ctx context.Context, name string, readyTimeout time.Duration, oracleClient string) (*podBackend, error) {
	// kube-apiserver registers the cacher's metrics when it installs
	// /metrics; without this, upstream's freshness-wait histogram would not
	// be collected in this process.
	cachermetrics.Register()
	var fresh watchcache.DecoratorOptions
	switch oracleClient {
	case "", OracleGRPC:
	case OracleInProcess:
		dial, err := e.inProcessDial()
		if err != nil {
			return nil, err
		}
		fresh.DialOracle = dial
	default:
		return nil, fmt.Errorf("storage: unknown oracle client %q (want %s or %s)", oracleClient, OracleGRPC, OracleInProcess)
	}
	dec, err := decorator(name, fresh)
	if err != nil {
		return nil, err
	}
	opts := generic.RESTOptions{
		StorageConfig:           e.podStorageConfig(),
		Decorator:               dec,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          "pods",
	}
	ps, err := podstorage.NewStorage(opts, nil, nil, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("storage: %s pod storage: %w", name, err)
	}
	b := &podBackend{name: name, store: ps.Pod.Store}
	if err := waitReady(ctx, b.store, readyTimeout); err != nil {
		b.destroy()
		return nil, fmt.Errorf("storage: %s: %w", name, err)
	}
	return b, nil
}

// waitReady polls the store's readiness check until it passes or the
// deadline expires.
func waitReady(ctx context.Context, s *genericregistry.Store, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if ctxsleep.Poll(ctx, 20*time.Millisecond, func() bool { err = s.ReadinessCheck(); return err == nil }) != nil {
		return fmt.Errorf("not ready within %v: %w", timeout, err)
	}
	return nil
}

func (b *podBackend) destroy() {
	if b.store.DestroyFunc != nil {
		b.store.DestroyFunc()
	}
}
