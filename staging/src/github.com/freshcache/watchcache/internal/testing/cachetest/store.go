package cachetest

import (
	"testing"

	"go.etcd.io/etcd/client/v3/kubernetes"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/utils/clock"
)

// NewStoreOn returns an etcd3 store of the example pods over client, with
// the prefix, codec and transformer of StartOn's defaults but no cache in
// front: a writer (e.g. one per member of a Cluster) whose writes land
// where the caches read. Cleanup closes it; the client stays open.
func NewStoreOn(t testing.TB, client *kubernetes.Client) storage.Interface {
	t.Helper()
	const prefix = "/pods/"
	versioner := storage.APIObjectVersioner{}
	compactor := etcd3.NewCompactor(client.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	s, err := etcd3.New(client, compactor, ProtoCodec, NewPod, NewPodList,
		etcd3testing.PathPrefix(), prefix, schema.GroupResource{Resource: "pods"},
		identity.NewEncryptCheckTransformer(), etcd3.NewDefaultLeaseManagerConfig(),
		etcd3.NewDefaultDecoder(ProtoCodec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
