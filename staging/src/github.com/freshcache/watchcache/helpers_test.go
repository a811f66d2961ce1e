package watchcache_test

import (
	"testing"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/fields"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/freshcache/watchcache/oracle"
)

func mustField(t *testing.T, s string) fields.Selector {
	t.Helper()
	sel, err := fields.ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// otherTestsClients ignores the reconnect goroutines that grpc starts, at
// any time, for etcd clients of earlier tests whose servers have stopped:
// they are not the cache's, and IgnoreCurrent cannot know them in advance.
var otherTestsClients = goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock")

// etcdWithOracle starts an embedded etcd and an Oracle on its client, both
// closed when the test ends.
func etcdWithOracle(t *testing.T) (*etcd3testing.EtcdTestServer, *oracle.Oracle) {
	t.Helper()
	server, _ := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	o, err := oracle.New(server.V3Client.Client, oracle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return server, o
}
