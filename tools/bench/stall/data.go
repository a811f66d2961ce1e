package stall

import (
	"context"
	"fmt"
	"math/rand/v2"
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

const etcdPrefix = "/registry"

// store writes configmaps straight to etcd in kube-apiserver's storage
// encoding, which loads tens of megabytes in seconds and keeps the writes'
// cost off the apiserver under test.
type store struct {
	client *clientv3.Client
	codec  runtime.Codec
	size   int
	gen    atomic.Int64
}

func newStore(endpoint string, objectBytes int) (*store, error) {
	cfg := storagebackend.NewDefaultConfig(etcdPrefix, nil)
	cfg.Transport.ServerList = []string{endpoint}
	opts := serveroptions.NewEtcdOptions(cfg)
	opts.DefaultStorageMediaType = runtime.ContentTypeProtobuf // kube-apiserver's
	completed := kubeapiserver.NewStorageFactoryConfig().Complete(opts)
	completed.APIResourceConfig = serverstorage.NewResourceConfig()
	factory, err := completed.New()
	if err != nil {
		return nil, fmt.Errorf("stall: storage factory: %w", err)
	}
	rc, err := factory.NewConfig(schema.GroupResource{Resource: "configmaps"}, nil)
	if err != nil {
		return nil, fmt.Errorf("stall: configmap storage config: %w", err)
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second,
		// Puts cut by a stall or by the end of the run would each be logged.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("stall: etcd client: %w", err)
	}
	return &store{client: client, codec: rc.Codec, size: objectBytes}, nil
}

func (s *store) close() { _ = s.client.Close() }

func objectName(i int) string { return fmt.Sprintf("cm-%06d", i) }

// configMap builds configmap i at generation gen: one data key of
// s.size random letters, which neither protobuf nor etcd compresses.
func (s *store) configMap(i int, gen int64) *v1.ConfigMap {
	r := rand.New(rand.NewPCG(uint64(i), uint64(gen)))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, s.size)
	for j := range b {
		b[j] = letters[r.IntN(len(letters))]
	}
	return &v1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: objectName(i), Namespace: Namespace,
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-a000-%012d", i)),
			CreationTimestamp: metav1.Unix(1735689600+int64(i), 0),
			Labels:            map[string]string{"app": fmt.Sprintf("app-%03d", i%97)},
			Annotations:       map[string]string{"bench.freshcache.io/gen": fmt.Sprint(gen)},
		},
		Data: map[string]string{"payload": string(b)},
	}
}

func (s *store) put(ctx context.Context, i int) error {
	data, err := runtime.Encode(s.codec, s.configMap(i, s.gen.Add(1)))
	if err != nil {
		return fmt.Errorf("stall: encoding configmap: %w", err)
	}
	key := etcdPrefix + "/configmaps/" + Namespace + "/" + objectName(i)
	if _, err := s.client.Put(ctx, key, string(data)); err != nil {
		return fmt.Errorf("stall: writing %s: %w", key, err)
	}
	return nil
}

// load writes configmaps 0..n-1 with 16 writers.
func (s *store) load(ctx context.Context, n int) error {
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range 16 {
		g.Go(func() error {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := s.put(gctx, i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// writeLoop updates random configmaps of n at perSec until ctx is done,
// and returns the writes done and failed. A write waits out a stall (the
// Put blocks until etcd resumes) rather than piling up: one writer.
func (s *store) writeLoop(ctx context.Context, n int, perSec float64) (done, failed int64) {
	if perSec <= 0 {
		<-ctx.Done()
		return 0, 0
	}
	lim := rate.NewLimiter(rate.Limit(perSec), 1)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for lim.Wait(ctx) == nil {
		if err := s.put(ctx, r.IntN(n)); err != nil {
			if ctx.Err() != nil {
				break
			}
			failed++
			continue
		}
		done++
	}
	return done, failed
}

// burst sends n updates of random configmaps at once and waits for them:
// sent while etcd is stopped, they queue and land together when it
// resumes, as the writes held up by a stall do.
func (s *store) burst(ctx context.Context, objects, n int) (done, failed int64) {
	var ok, bad atomic.Int64
	var g errgroup.Group
	r := rand.New(rand.NewPCG(uint64(objects), uint64(n)))
	for range n {
		i := r.IntN(objects)
		g.Go(func() error {
			if err := s.put(ctx, i); err != nil {
				bad.Add(1)
				return nil
			}
			ok.Add(1)
			return nil
		})
	}
	_ = g.Wait()
	return ok.Load(), bad.Load()
}
