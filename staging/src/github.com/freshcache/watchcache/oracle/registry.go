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
// the client if the registry dialled it. Each entry also keeps a Note that
// its dial produced (the watch cache keeps the etcd version guard's
// reason to delegate there), so that what is known about a cluster lives with it.
//
// Safe for concurrent use. mu guards entries only: a dial (which may take
// up to its dial and check timeouts) runs without it, so an Acquire of one
// cluster never waits for another cluster's dial; Acquires of the cluster
// being dialled wait for that dial's outcome.
type Registry struct {
	opts Options

	mu struct {
		sync.Mutex
		entries map[string]*entry
	}
}

type entry struct {
	// ready is closed once the dial has finished; until then only the
	// dialling Acquire touches the fields below, then they are read-only
	// (refs excepted, which mu guards).
	ready  chan struct{}
	err    error
	oracle *Oracle
	client *clientv3.Client // closed with the entry if owned
	owned  bool
	note   string
	refs   int // guarded by Registry.mu
}

// Dial makes the client of a cluster the registry has not seen, and a note
// to keep with it (see Registry).
type Dial func() (client *clientv3.Client, note string, err error)

// Lease is one reference to a cluster's Oracle.
type Lease struct {
	// Oracle is the cluster's shared revision oracle.
	Oracle *Oracle
	// Note is what the cluster's dial returned with its client.
	Note    string
	release func()
}

// Release drops the reference; it is idempotent. The last release closes
// the Oracle and the client the registry dialled.
func (l *Lease) Release() { l.release() }

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

// Shared returns the process-wide registry, built on first use. Its
// Oracles use the default Options and record apiserver_freshcache_revision_fetches_total and
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

// Acquire returns a lease on the Oracle for key, creating it on first use
// with the client dial makes, which the registry then owns. A failed dial
// fails every Acquire that waited for it and leaves no entry behind.
func (r *Registry) Acquire(key string, dial Dial) (*Lease, error) {
	return r.acquire(key, func() (*clientv3.Client, string, bool, error) {
		client, note, err := dial()
		if err != nil {
			return nil, "", false, fmt.Errorf("oracle: dialing etcd for %q: %w", key, err)
		}
		return client, note, true, nil
	})
}

// ForClient returns a lease on the Oracle for client, creating it on first
// use. The registry does not own client; release before closing it.
func (r *Registry) ForClient(client *clientv3.Client) (*Lease, error) {
	return r.acquire(fmt.Sprintf("client:%p", client), func() (*clientv3.Client, string, bool, error) {
		return client, "", false, nil
	})
}

// Len returns the number of live Oracles (and dials in progress).
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.entries)
}

func (r *Registry) acquire(key string, open func() (*clientv3.Client, string, bool, error)) (*Lease, error) {
	r.mu.Lock()
	e, ok := r.mu.entries[key]
	if ok {
		e.refs++
		r.mu.Unlock()
		<-e.ready
		if e.err != nil {
			return nil, e.err
		}
		return r.lease(key, e), nil
	}
	e = &entry{ready: make(chan struct{}), refs: 1}
	r.mu.entries[key] = e
	r.mu.Unlock()

	client, note, owned, err := open()
	if err == nil {
		e.oracle, err = New(client, r.opts)
		if err != nil && owned {
			_ = client.Close()
		}
	}
	if err != nil {
		r.mu.Lock()
		delete(r.mu.entries, key)
		r.mu.Unlock()
		e.err = err
		close(e.ready)
		return nil, err
	}
	e.client, e.owned, e.note = client, owned, note
	close(e.ready)
	return r.lease(key, e), nil
}

func (r *Registry) lease(key string, e *entry) *Lease {
	var once sync.Once
	return &Lease{Oracle: e.oracle, Note: e.note, release: func() {
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
	}}
}
