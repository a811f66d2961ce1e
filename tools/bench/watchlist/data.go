package watchlist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	serveroptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/kubernetes/pkg/kubeapiserver"

	// The storage factory encodes through legacyscheme.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// The data set. Configmap i of the huge resource lives in namespace
// hugeNamespace(i % HugeNamespaces); the small namespace holds
// SmallObjects configmaps and as many secrets, which the reads target.
const (
	etcdPrefix     = "/registry"
	smallNamespace = "wl-small"
)

func hugeNamespace(n int) string { return fmt.Sprintf("wl-huge-%02d", n) }
func hugeName(i int) string      { return fmt.Sprintf("cm-%07d", i) }
func smallName(i int) string     { return fmt.Sprintf("small-%03d", i) }

// store writes the data set straight to etcd, encoded as kube-apiserver
// stores it: much faster than creating objects through the API, and it
// costs the apiserver only the watch events.
type store struct {
	cfg    Config
	client *clientv3.Client
	cmCdc  runtime.Codec
	secCdc runtime.Codec
	value  string
	gen    atomic.Int64
}

func newStore(endpoint string, cfg Config) (*store, error) {
	sc := storagebackend.NewDefaultConfig(etcdPrefix, nil)
	sc.Transport.ServerList = []string{endpoint}
	opts := serveroptions.NewEtcdOptions(sc)
	// kube-apiserver stores core objects as protobuf.
	opts.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	completed := kubeapiserver.NewStorageFactoryConfig().Complete(opts)
	completed.APIResourceConfig = serverstorage.NewResourceConfig()
	factory, err := completed.New()
	if err != nil {
		return nil, fmt.Errorf("watchlist: storage factory: %w", err)
	}
	cm, err := factory.NewConfig(schema.GroupResource{Resource: resConfigMaps}, nil)
	if err != nil {
		return nil, fmt.Errorf("watchlist: configmap storage config: %w", err)
	}
	sec, err := factory.NewConfig(schema.GroupResource{Resource: resSecrets}, nil)
	if err != nil {
		return nil, fmt.Errorf("watchlist: secret storage config: %w", err)
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second,
		// Writers stop by cancelling in-flight Puts; the client would log
		// every one of them.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("watchlist: etcd client: %w", err)
	}
	return &store{cfg: cfg, client: client, cmCdc: cm.Codec, secCdc: sec.Codec, value: strings.Repeat("x", cfg.ValueBytes)}, nil
}

func (s *store) close() { _ = s.client.Close() }

// configMap builds a configmap whose data changes with every write (gen).
func (s *store) configMap(ns, name string, gen int64) *v1.ConfigMap {
	return &v1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", gen)),
			CreationTimestamp: metav1.Unix(1735689600, 0),
			Labels:            map[string]string{"app": "watchlist-bench"},
		},
		Data: map[string]string{"value": s.value, "gen": fmt.Sprint(gen)},
	}
}

func (s *store) secret(name string, gen int64) *v1.Secret {
	return &v1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: smallNamespace,
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012d", gen)),
			CreationTimestamp: metav1.Unix(1735689600, 0),
		},
		Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{"value": []byte(s.value), "gen": []byte(fmt.Sprint(gen))},
	}
}

func (s *store) put(ctx context.Context, codec runtime.Codec, resource, ns, name string, obj runtime.Object) error {
	data, err := runtime.Encode(codec, obj)
	if err != nil {
		return fmt.Errorf("watchlist: encoding %s %s/%s: %w", resource, ns, name, err)
	}
	if _, err := s.client.Put(ctx, etcdPrefix+"/"+resource+"/"+ns+"/"+name, string(data)); err != nil {
		return fmt.Errorf("watchlist: writing %s %s/%s: %w", resource, ns, name, err)
	}
	return nil
}

// putConfigMap writes configmap i: i < Objects is in the huge namespaces,
// the SmallObjects after them are the small namespace's.
func (s *store) putConfigMap(ctx context.Context, i int) error {
	ns, name := hugeNamespace(i%s.cfg.HugeNamespaces), hugeName(i)
	if i >= s.cfg.Objects {
		ns, name = smallNamespace, smallName(i-s.cfg.Objects)
	}
	return s.put(ctx, s.cmCdc, resConfigMaps, ns, name, s.configMap(ns, name, s.gen.Add(1)))
}

func (s *store) putSecret(ctx context.Context, i int) error {
	name := smallName(i)
	return s.put(ctx, s.secCdc, resSecrets, smallNamespace, name, s.secret(name, s.gen.Add(1)))
}

// configMaps is every configmap the data set has.
func (s *store) configMaps() int { return s.cfg.Objects + s.cfg.SmallObjects }

// load writes every configmap and secret with LoadWriters concurrent Puts.
func (s *store) load(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	total := s.configMaps() + s.cfg.SmallObjects
	for range s.cfg.LoadWriters {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				switch {
				case i < s.configMaps():
					if err := s.putConfigMap(gctx, i); err != nil {
						return err
					}
				case i < total:
					if err := s.putSecret(gctx, i-s.configMaps()); err != nil {
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

// writers is the background write load: WriteRate updates per second of
// random configmaps (anywhere) and as many of the small secrets.
type writers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	writes atomic.Int64
	errs   atomic.Int64
}

func (s *store) startWriters(ctx context.Context) *writers {
	ctx, cancel := context.WithCancel(ctx)
	w := &writers{cancel: cancel}
	run := func(seed uint64, n int, put func(context.Context, int) error) {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			lim := rate.NewLimiter(rate.Limit(s.cfg.WriteRate), 1)
			rnd := rand.New(rand.NewPCG(seed, 7))
			for lim.Wait(ctx) == nil {
				if err := put(ctx, rnd.IntN(n)); err != nil {
					if ctx.Err() == nil {
						w.errs.Add(1)
					}
					continue
				}
				w.writes.Add(1)
			}
		}()
	}
	run(1, s.configMaps(), s.putConfigMap)
	run(2, s.cfg.SmallObjects, s.putSecret)
	return w
}

// counts is the writes and errors so far.
func (w *writers) counts() (writes, errs int64) { return w.writes.Load(), w.errs.Load() }

func (w *writers) stop() {
	w.cancel()
	w.wg.Wait()
}
