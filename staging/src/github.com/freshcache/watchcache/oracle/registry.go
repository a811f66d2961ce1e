package oracle

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/freshcache/watchcache/metrics"
)

// Registry shares one Oracle among every cache that talks to the same etcd
// cluster. k8s.io/apiserver creates one etcd client per resource, so a
// registry keyed by *clientv3.Client alone would not share anything there;
// Acquire is keyed by a string the caller derives from the transport
// (EndpointsKey), and the registry then owns the one client it dialled.
//
// Entries are reference counted: the last release closes the Oracle, and
// the client if the registry dialled it. Safe for concurrent use.
type Registry struct {
	opts Options

	mu struct {
		sync.Mutex
		entries map[string]*entry
	}
}

type entry struct {
	oracle *Oracle
	client *clientv3.Client // closed with the entry if owned
	owned  bool
	refs   int
}

// NewRegistry returns an empty registry whose Oracles use opts.
func NewRegistry(opts Options) *Registry {
	r := &Registry{opts: opts}
	r.mu.entries = make(map[string]*entry)
	return r
}

// shared is built on first use, so that importing the package registers no
// metrics.
var shared = sync.OnceValue(func() *Registry {
	return NewRegistry(Options{Recorder: metrics.NewOracleRecorder()})
})

// Shared returns the process-wide registry. Its Oracles use the default
// Options and record apiserver_freshcache_revision_fetches_total and
// apiserver_freshcache_reads_per_revision_fetch (metrics.OracleRecorder).
// Caches in different storage decorators of one apiserver (core,
// apiextensions, aggregator) find each other's Oracles through it.
func Shared() *Registry { return shared() }

// EndpointsKey is a registry key for a client configuration: the sorted,
// de-duplicated endpoints. Endpoints that reach the same cluster through
// different credentials should get different keys (append the identity).
func EndpointsKey(endpoints []string) string {
	eps := slices.Clone(endpoints)
	slices.Sort(eps)
	return "endpoints:" + strings.Join(slices.Compact(eps), ",")
}

// Acquire returns the Oracle for key, creating it on first use with a client
// from dial, which the registry then owns. release drops the reference; it
// is idempotent. The last release closes the Oracle and the client.
func (r *Registry) Acquire(key string, dial func() (*clientv3.Client, error)) (o *Oracle, release func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.mu.entries[key]
	if !ok {
		client, err := dial()
		if err != nil {
			return nil, nil, fmt.Errorf("oracle: dialing etcd for %q: %w", key, err)
		}
		if e, err = r.newEntryLocked(key, client, true); err != nil {
			_ = client.Close()
			return nil, nil, err
		}
	}
	return r.refLocked(key, e)
}

// ForClient returns the Oracle for client, creating it on first use. The
// registry does not own client; the caller must release before closing it.
func (r *Registry) ForClient(client *clientv3.Client) (o *Oracle, release func(), err error) {
	key := fmt.Sprintf("client:%p", client)
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.mu.entries[key]
	if !ok {
		if e, err = r.newEntryLocked(key, client, false); err != nil {
			return nil, nil, err
		}
	}
	return r.refLocked(key, e)
}

// Len returns the number of live Oracles.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.entries)
}

func (r *Registry) newEntryLocked(key string, client *clientv3.Client, owned bool) (*entry, error) {
	o, err := New(client, r.opts)
	if err != nil {
		return nil, err
	}
	e := &entry{oracle: o, client: client, owned: owned}
	r.mu.entries[key] = e
	return e, nil
}

func (r *Registry) refLocked(key string, e *entry) (*Oracle, func(), error) {
	e.refs++
	var once sync.Once
	release := func() {
		once.Do(func() {
			r.mu.Lock()
			e.refs--
			last := e.refs == 0
			if last {
				delete(r.mu.entries, key)
			}
			r.mu.Unlock()
			if last {
				e.oracle.Close()
				if e.owned {
					_ = e.client.Close()
				}
			}
		})
	}
	return e.oracle, release, nil
}
