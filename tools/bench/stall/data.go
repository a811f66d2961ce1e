package stall

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/freshcache/freshcache/tools/bench/etcdload"
)

var configMapsGR = schema.GroupResource{Resource: "configmaps"}

// store writes configmaps straight to etcd in kube-apiserver's storage
// encoding (package etcdload), which loads tens of megabytes in seconds
// and keeps the writes' cost off the apiserver under test.
type store struct {
	w    *etcdload.Writer
	size int
	gen  atomic.Int64
}

func newStore(endpoint string, objectBytes int) (*store, error) {
	w, err := etcdload.New(etcdload.Options{Endpoint: endpoint, Resources: []schema.GroupResource{configMapsGR}})
	if err != nil {
		return nil, fmt.Errorf("stall: %w", err)
	}
	return &store{w: w, size: objectBytes}, nil
}

func (s *store) close() { _ = s.w.Close() }

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
	cm := etcdload.ConfigMap(Namespace, objectName(i), int64(i),
		map[string]string{"app": fmt.Sprintf("app-%03d", i%97)},
		map[string]string{"payload": string(b)})
	cm.CreationTimestamp = metav1.Unix(etcdload.Created.Unix()+int64(i), 0)
	cm.Annotations = map[string]string{"bench.freshcache.io/gen": fmt.Sprint(gen)}
	return cm
}

func (s *store) put(ctx context.Context, i int) error {
	if _, err := s.w.Put(ctx, configMapsGR, Namespace, objectName(i), s.configMap(i, s.gen.Add(1))); err != nil {
		return fmt.Errorf("stall: %w", err)
	}
	return nil
}

// load writes configmaps 0..n-1 with 16 writers.
func (s *store) load(ctx context.Context, n int) error {
	return etcdload.Load(ctx, n, 16, s.put)
}

// writeLoop updates random configmaps of n at perSec until ctx is done,
// and returns the writes done and failed. A write waits out a stall (the
// Put blocks until etcd resumes) rather than piling up: one writer.
func (s *store) writeLoop(ctx context.Context, n int, perSec float64) (done, failed int64) {
	var c etcdload.Counts
	etcdload.Update(ctx, etcdload.UpdateOptions{PerSec: perSec, Objects: n, Seed: uint64(n)}, s.put, &c)
	return c.Load()
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
