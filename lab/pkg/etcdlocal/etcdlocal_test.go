package etcdlocal

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/freshcache/freshcache/lab/internal/tcptest"
)

func client(t *testing.T, c *Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func TestDataSurvivesRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := Options{DataDir: t.TempDir(), UnsafeNoFsync: true}

	first, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, first).Put(ctx, "/registry/k", "v1"); err != nil {
		t.Fatal(err)
	}
	first.Close()

	second, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	resp, err := client(t, second).Get(ctx, "/registry/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
		t.Fatalf("after restart got %v, want the value written before", resp.Kvs)
	}
}

func TestThreeMembersFormAQuorum(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{DataDir: t.TempDir(), Members: 3, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := len(c.Endpoints()); got != 3 {
		t.Fatalf("%d endpoints, want 3", got)
	}
	cli := client(t, c)
	members, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members.Members) != 3 {
		t.Fatalf("member list has %d members, want 3", len(members.Members))
	}
	// A linearizable read through each member proves each one is in the quorum.
	for _, ep := range c.Endpoints() {
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := one.Get(ctx, "x"); err != nil {
			t.Errorf("linearizable read via %s: %v", ep, err)
		}
		_ = one.Close()
	}
}

func TestPortInUseIsReported(t *testing.T) {
	l := tcptest.Listen(t)
	port := l.Addr().(*net.TCPAddr).Port
	_, err := Start(context.Background(), Options{DataDir: t.TempDir(), ClientPorts: []int{port}})
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("Start on a taken port returned %v, want ErrPortInUse", err)
	}
	if want := strconv.Itoa(port); !contains(err.Error(), want) {
		t.Fatalf("error %q does not name the port %s", err, want)
	}
}

func TestOptionsValidation(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"no data dir", Options{}},
		{"negative members", Options{DataDir: "x", Members: -1}},
		{"too many members", Options{DataDir: "x", Members: 9}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Start(context.Background(), tc.opts); err == nil {
				t.Fatal("invalid options accepted")
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
