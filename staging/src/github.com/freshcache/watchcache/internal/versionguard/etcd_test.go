package versionguard

import (
	"context"
	"strings"
	"testing"
	"time"

	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
)

// TestCheckAgainstEmbeddedEtcd vets a real member (etcd v3.7, which has the
// fixes) and an endpoint where nothing listens.
func TestCheckAgainstEmbeddedEtcd(t *testing.T) {
	server, _ := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	cli := server.V3Client.Client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res := Check(ctx, cli.Maintenance, cli.Endpoints())
	if !res.OK {
		t.Fatalf("embedded etcd judged unsupported: %s", res.Reason())
	}
	if v := res.Endpoints[0].Version; !strings.HasPrefix(v, "3.") {
		t.Fatalf("version %q", v)
	}

	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	res = Check(short, cli.Maintenance, append(cli.Endpoints(), "http://127.0.0.1:1"))
	if res.OK {
		t.Fatal("an unreachable endpoint must make the verdict negative")
	}
	if !strings.Contains(res.Reason(), "127.0.0.1:1") {
		t.Fatalf("reason %q does not name the unreachable endpoint", res.Reason())
	}
}
