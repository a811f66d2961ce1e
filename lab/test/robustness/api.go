package robustness

import (
	"context"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// API is one "apiserver" as the clients see it: a pod storage built by a
// StorageDecorator in this process (Cache), or a kube-apiserver process
// driven over HTTP. Each is pinned to one etcd member.
type API interface {
	// Index numbers the APIs of a run (record.Op.Cache).
	Index() int
	// Member is the etcd member the API talks to.
	Member() int
	// Do runs a client operation and fills in its result (RV, Found, Got,
	// Items); the caller classifies the error.
	Do(ctx context.Context, op *record.Op) error
	// Watch watches the pods (of node, when set) from rv, with bookmarks.
	Watch(ctx context.Context, node string, rv int64) (watch.Interface, error)
	// WaitReady waits until the API serves again (after start or faults).
	WaitReady(ctx context.Context) error
	// Restart stops and starts the API, as an apiserver restart does.
	Restart(ctx context.Context) error
	// Stop releases it.
	Stop()
}
