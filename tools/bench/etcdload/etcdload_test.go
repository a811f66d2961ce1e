package etcdload

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/freshcache/freshcache/lab/pkg/etcdlocal"
)

var (
	configMaps = schema.GroupResource{Resource: "configmaps"}
	secrets    = schema.GroupResource{Resource: "secrets"}
)

func startWriter(t *testing.T) (context.Context, *Writer) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cluster, err := etcdlocal.Start(ctx, etcdlocal.Options{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	w, err := New(Options{Endpoint: cluster.Endpoints()[0], Resources: []schema.GroupResource{configMaps, secrets}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return ctx, w
}

// TestPutWritesWhatKubeAPIServerWould: the object lands at
// kube-apiserver's key in its protobuf storage encoding, which the
// resource's storage codec reads back.
func TestPutWritesWhatKubeAPIServerWould(t *testing.T) {
	ctx, w := startWriter(t)
	for name, tc := range map[string]struct {
		gr      schema.GroupResource
		obj     runtime.Object
		wantKey string
	}{
		"configmap": {configMaps, &v1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm-1", Namespace: "ns-a"},
			Data:       map[string]string{"k": "v"},
		}, "/registry/configmaps/ns-a/cm-1"},
		"secret": {secrets, &v1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "s-1", Namespace: "ns-b"},
			Data:       map[string][]byte{"k": []byte("v")},
		}, "/registry/secrets/ns-b/s-1"},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := meta.Accessor(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			rev, err := w.Put(ctx, tc.gr, m.GetNamespace(), m.GetName(), tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if key := Key(tc.gr, m.GetNamespace(), m.GetName()); key != tc.wantKey {
				t.Errorf("Key = %s, want %s", key, tc.wantKey)
			}
			resp, err := w.client.Get(ctx, tc.wantKey)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 1 {
				t.Fatalf("Get %s: %d keys", tc.wantKey, len(resp.Kvs))
			}
			if resp.Kvs[0].ModRevision != rev {
				t.Errorf("Put returned revision %d, the key was written at %d", rev, resp.Kvs[0].ModRevision)
			}
			if !bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s\x00")) {
				t.Errorf("value %q is not kube-apiserver's protobuf encoding", resp.Kvs[0].Value)
			}
			back, err := runtime.Decode(w.Config(tc.gr).Codec, resp.Kvs[0].Value)
			if err != nil {
				t.Fatal(err)
			}
			if bm, err := meta.Accessor(back); err != nil || bm.GetName() != m.GetName() || bm.GetNamespace() != m.GetNamespace() {
				t.Errorf("decoded %#v", back)
			}
			now, err := w.Revision(ctx)
			if err != nil || now < rev {
				t.Errorf("Revision = %d, %v after a write at %d", now, err, rev)
			}
		})
	}
}

// TestConfig: Config hands out copies, and the writer refuses a resource
// it was not built for.
func TestConfig(t *testing.T) {
	ctx, w := startWriter(t)
	c := w.Config(configMaps)
	c.Prefix = "/elsewhere"
	if w.Config(configMaps).Prefix == "/elsewhere" {
		t.Error("Config returns the writer's own configuration")
	}
	pods := schema.GroupResource{Resource: "pods"}
	if c := w.Config(pods); c != nil {
		t.Errorf("Config of a resource not asked for = %v", c)
	}
	_, err := w.Put(ctx, pods, "ns", "p", &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	if err == nil || !strings.Contains(err.Error(), "pods ns/p") {
		t.Errorf("Put of a resource not asked for: %v", err)
	}
	resp, err := w.client.Get(ctx, Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("etcd holds %d keys after a refused Put", resp.Count)
	}
}
