package watchlist

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshcache/freshcache/tools/bench/etcdload"
)

// The data set. Configmap i of the huge resource lives in namespace
// hugeNamespace(i % HugeNamespaces); the small namespace holds
// SmallObjects configmaps and as many secrets, which the reads target.
const smallNamespace = "wl-small"

var (
	configMapsGR = schema.GroupResource{Resource: resConfigMaps}
	secretsGR    = schema.GroupResource{Resource: resSecrets}
)

func hugeNamespace(n int) string { return fmt.Sprintf("wl-huge-%02d", n) }
func hugeName(i int) string      { return fmt.Sprintf("cm-%07d", i) }
func smallName(i int) string     { return fmt.Sprintf("small-%03d", i) }

// store writes the data set straight to etcd, encoded as kube-apiserver
// stores it (package etcdload): much faster than creating objects through
// the API, and it costs the apiserver only the watch events.
type store struct {
	cfg   Config
	w     *etcdload.Writer
	value string
	gen   atomic.Int64
}

func newStore(endpoint string, cfg Config) (*store, error) {
	w, err := etcdload.New(etcdload.Options{Endpoint: endpoint, Resources: []schema.GroupResource{configMapsGR, secretsGR}})
	if err != nil {
		return nil, fmt.Errorf("watchlist: %w", err)
	}
	return &store{cfg: cfg, w: w, value: strings.Repeat("x", cfg.ValueBytes)}, nil
}

func (s *store) close() { _ = s.w.Close() }

// configMap builds a configmap whose data changes with every write (gen).
func (s *store) configMap(ns, name string, gen int64) *v1.ConfigMap {
	return etcdload.ConfigMap(ns, name, gen, map[string]string{"app": "watchlist-bench"},
		map[string]string{"value": s.value, "gen": fmt.Sprint(gen)})
}

func (s *store) secret(name string, gen int64) *v1.Secret {
	return &v1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: smallNamespace,
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012d", gen)),
			CreationTimestamp: etcdload.Created,
		},
		Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{"value": []byte(s.value), "gen": []byte(fmt.Sprint(gen))},
	}
}

func (s *store) put(ctx context.Context, gr schema.GroupResource, ns, name string, obj runtime.Object) error {
	if _, err := s.w.Put(ctx, gr, ns, name, obj); err != nil {
		return fmt.Errorf("watchlist: %w", err)
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
	return s.put(ctx, configMapsGR, ns, name, s.configMap(ns, name, s.gen.Add(1)))
}

func (s *store) putSecret(ctx context.Context, i int) error {
	name := smallName(i)
	return s.put(ctx, secretsGR, smallNamespace, name, s.secret(name, s.gen.Add(1)))
}

// configMaps is every configmap the data set has.
func (s *store) configMaps() int { return s.cfg.Objects + s.cfg.SmallObjects }

// load writes every configmap and secret with LoadWriters concurrent Puts.
func (s *store) load(ctx context.Context) error {
	return etcdload.Load(ctx, s.configMaps()+s.cfg.SmallObjects, s.cfg.LoadWriters, func(ctx context.Context, i int) error {
		if i < s.configMaps() {
			return s.putConfigMap(ctx, i)
		}
		return s.putSecret(ctx, i-s.configMaps())
	})
}

// writers is the background write load: WriteRate updates per second of
// random configmaps (anywhere) and as many of the small secrets.
type writers struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	updates etcdload.Counts // both resources'
}

func (s *store) startWriters(ctx context.Context) *writers {
	ctx, cancel := context.WithCancel(ctx)
	w := &writers{cancel: cancel}
	run := func(seed uint64, n int, put etcdload.PutFunc) {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			etcdload.Update(ctx, etcdload.UpdateOptions{PerSec: s.cfg.WriteRate, Objects: n, Seed: seed}, put, &w.updates)
		}()
	}
	run(1, s.configMaps(), s.putConfigMap)
	run(2, s.cfg.SmallObjects, s.putSecret)
	return w
}

// counts is the writes and errors so far.
func (w *writers) counts() (writes, errs int64) { return w.updates.Load() }

func (w *writers) stop() {
	w.cancel()
	w.wg.Wait()
}
