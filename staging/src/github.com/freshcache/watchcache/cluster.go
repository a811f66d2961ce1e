package watchcache

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"github.com/freshcache/watchcache/internal/versionguard"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

// What every cache of one etcd cluster shares: the revision oracle, the
// etcd client it owns and the version guard's reason to delegate.
//
// k8s.io/apiserver's etcd3 store keeps its client to itself and dials one
// per resource, so the decorator cannot borrow one. Instead the oracle
// registry dials a client of its own from the resource's
// storagebackend.TransportConfig (endpoints and TLS files), the first time
// a cluster is seen, and closes it when the last cache of that cluster is
// destroyed (reference counted). Caches on the same transport share it,
// across decorators of one process (core, apiextensions, aggregator).
//
// The version guard runs once per dial, with that client: every endpoint
// must run an etcd with sound progress notifications (versionguard). Its
// reason is the registry entry's note, logged once per dial.
// Not supported: TransportConfig.EgressLookup (konnectivity); such a
// transport gets a direct connection for its revision fetches.

const (
	dialTimeout  = 20 * time.Second
	checkTimeout = 10 * time.Second
)

// transportKey identifies a cluster and the identity used to reach it.
func transportKey(t storagebackend.TransportConfig) string {
	return fmt.Sprintf("%s|cert=%s|key=%s|ca=%s", oracle.EndpointsKey(t.ServerList), t.CertFile, t.KeyFile, t.TrustedCAFile)
}

// acquireCluster returns the shared Oracle for t, the reason consistent
// reads must be delegated ("" if none), and the release func. dial makes
// the registry's client the first time t's cluster is seen; the version
// guard's reason is the registry entry's note, so it lives and dies with
// the cluster's entry.
func acquireCluster(reg *oracle.Registry, t storagebackend.TransportConfig, dial func(storagebackend.TransportConfig) (*clientv3.Client, error)) (*oracle.Oracle, string, func(), error) {
	lease, err := reg.Acquire(transportKey(t), func() (*clientv3.Client, string, error) {
		client, err := dial(t)
		if err != nil {
			return nil, "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		defer cancel()
		return client, guardReason(versionguard.Check(ctx, client, t.ServerList)), nil
	})
	if err != nil {
		return nil, "", nil, err
	}
	return lease.Oracle, lease.Note, lease.Release, nil
}

// guardReason turns the version guard's result into a disabled reason,
// logging a negative one (once per dial, i.e. once per cluster).
func guardReason(res versionguard.Result) string {
	if res.OK {
		return ""
	}
	klog.ErrorS(errors.New(res.Reason()), "freshcache: etcd progress notifications cannot be trusted; consistent reads are delegated to etcd (needs etcd >= 3.4.31, >= 3.5.13 or >= 3.6.0)")
	return metrics.ReasonEtcdVersion
}

// dialEtcd dials the revision oracle's client. Like the etcd3 store's
// client it uses the transport's endpoints and TLS files; it makes only
// one-key count reads and Status calls.
func dialEtcd(t storagebackend.TransportConfig) (*clientv3.Client, error) {
	var tlsConfig *tls.Config
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		info := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
		var err error
		if tlsConfig, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("watchcache: etcd TLS: %w", err)
		}
	}
	return clientv3.New(clientv3.Config{
		Endpoints:            t.ServerList,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		TLS:                  tlsConfig,
		Logger:               zap.NewNop(),
	})
}
