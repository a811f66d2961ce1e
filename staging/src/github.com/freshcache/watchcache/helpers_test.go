package watchcache_test

import (
	"testing"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/fields"
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
