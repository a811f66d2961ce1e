package watchcache

import (
	"errors"
	"fmt"
	"math"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/features"
	"github.com/freshcache/watchcache/internal/consistency"
	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

// TimeoutAction says what a consistent read does when the cache is not
// fresh enough within ConsistentReadTimeout.
type TimeoutAction string

const (
	// TimeoutFallback serves the read from etcd (the default).
	TimeoutFallback TimeoutAction = "fallback"
	// TimeoutReject answers 429 Too Many Requests with Retry-After.
	TimeoutReject TimeoutAction = "reject"
)

// Defaults of Options.
const (
	DefaultEventsHistoryWindow   = history.DefaultWindow
	DefaultHistoryCapacity       = history.DefaultCapacity
	DefaultConsistentReadTimeout = 3 * time.Second
	// DefaultInconsistencyCheckPeriod is upstream's consistency check
	// period.
	DefaultInconsistencyCheckPeriod = consistency.DefaultPeriod
)

// ErrInvalidOptions wraps every Options validation failure.
var ErrInvalidOptions = errors.New("watchcache: invalid options")

// Options configures the cache. The zero value means the production
// defaults; every field documents its own default.
type Options struct {
	// EventsHistoryWindow is how long events are kept for watch resumption,
	// Exact reads and continue tokens. Zero: the resource's
	// storagebackend EventsHistoryWindow if set, else 75s. Must not be
	// negative.
	EventsHistoryWindow time.Duration

	// HistoryCapacity bounds the number of events kept whatever their age.
	// Zero: DefaultHistoryCapacity. Must not be negative.
	HistoryCapacity int

	// ConsistentReadsFromCache overrides the feature gate of the same name.
	// Nil: read the gate once, when NewStorageDecorator is called.
	ConsistentReadsFromCache *bool

	// FreshResourceVersionZero overrides the feature gate of the same name.
	// Nil: read the gate once, when NewStorageDecorator is called.
	FreshResourceVersionZero *bool

	// ConsistentReadTimeout bounds how long a read waits for the cache to
	// be fresh enough: consistent reads (rv="", and rv=0 under
	// FreshResourceVersionZero) and rv=N NotOlderThan. A consistent WATCH
	// with TimeoutFallback first waits for etcd's revision for as long as
	// its context lasts, as upstream's cacher does, and this bounds only
	// the wait for the cache to reach it. Zero: 3s. Must not be negative.
	// kube-apiserver: --consistent-read-timeout.
	ConsistentReadTimeout time.Duration

	// TimeoutAction is what a consistent read does after
	// ConsistentReadTimeout: TimeoutFallback serves it from etcd with a
	// quorum read, TimeoutReject answers 429 with Retry-After. Empty:
	// TimeoutFallback. (A NotOlderThan read answers "too large resource
	// version" either way, as upstream. A WATCH is never served from etcd:
	// with TimeoutFallback it gets "too large resource version" after the
	// timeout; with TimeoutReject its whole wait, revision included, is
	// bounded by the timeout and ends in 429, which client-go retries. An
	// rv=0 LIST that FreshResourceVersionZero made wait gets 429 either
	// way: upstream never sends one to etcd.)
	// kube-apiserver: --consistent-read-timeout-action.
	TimeoutAction TimeoutAction

	// FallbackBudget bounds the reads that TimeoutFallback sends to etcd
	// at once, per resource, by the objects they cover: while the reads
	// in flight cover more than FallbackBudget times the objects the
	// cache holds, a read whose wait ended gets 429 with Retry-After
	// instead (one is always let through when none is in flight). Zero:
	// DefaultFallbackBudget (1). Negative: unbounded, as upstream's
	// fallback. kube-apiserver: --consistent-read-fallback-budget.
	FallbackBudget float64

	// WatcherQueueCapacity is how many events a watcher may fall behind
	// before it is terminated as slow. Zero: 1024.
	WatcherQueueCapacity int

	// WatcherResultBuffer is the capacity of each watcher's result channel.
	// Zero: 100.
	WatcherResultBuffer int

	// BookmarkFrequency is how often watchers that allow bookmarks get one
	// (and always ~2s before their deadline). Zero: 1 minute.
	BookmarkFrequency time.Duration

	// ListPageSize is the page size of the cache's lists from etcd.
	// Zero: 10000.
	ListPageSize int64

	// InconsistencyDetection overrides the CacheInconsistencyDetection
	// feature gate: a periodic comparison of the cache with etcd at the
	// cache's revision, which purges and relists the cache when they
	// differ. Nil: read the gate once, when NewStorageDecorator is called
	// (or in New).
	InconsistencyDetection *bool

	// DirectEtcdWatch overrides the feature gate of the same name: the
	// storage decorator dials every cache an etcd client of its own, with
	// which the cache lists and watches etcd (Config.Etcd). Nil: read the
	// gate once, when NewStorageDecorator is called (or in New).
	DirectEtcdWatch *bool

	// RevisionsFromWrites overrides the feature gate of the same name:
	// the cache's writes answer the consistent reads that wait for a
	// revision when they are sent (oracle.Write). Create and
	// GuaranteedUpdate take part only when the storage's transformer is
	// wrapped by AnnounceWrites, as NewStorageDecorator does. Nil: read
	// the gate once, when NewStorageDecorator is called (or in New).
	RevisionsFromWrites *bool

	// ProgressFromOwnWrites overrides the feature gate of the same name: a
	// cache behind a read's revision advances to it without a progress
	// request when every revision in between is one of this process's
	// writes of another resource (oracle.Ledger). It takes effect only
	// with RevisionsFromWrites, an Oracle that has a Ledger, and
	// Config.StoragePrefix set. Nil: read the gate once, when
	// NewStorageDecorator is called (or in New).
	ProgressFromOwnWrites *bool

	// InconsistencyCheckPeriod is the pause between the end of one round
	// of the inconsistency detector and the start of the next, stretched
	// by up to half at random. Each round lists the resource from etcd
	// once, paginated by ListPageSize. Zero:
	// DefaultInconsistencyCheckPeriod (5 minutes). Must not be negative.
	InconsistencyCheckPeriod time.Duration

	// Clock drives timeouts, bookmarks, history ages and the inconsistency
	// detector's pauses. Nil: real clock.
	Clock clock.WithTicker

	// Metrics returns the recorder of one resource. Nil: the component-base
	// metrics of package metrics (apiserver_freshcache_*).
	Metrics func(schema.GroupResource) metrics.Recorder
}

// DecoratorOptions configures NewStorageDecorator: the Options of every
// cache it builds, and how the caches of one etcd cluster share a revision
// oracle. (New takes the oracle in Config.Oracle instead.)
type DecoratorOptions struct {
	Options

	// OracleRegistry shares revision oracles (and their etcd clients)
	// among the caches a storage decorator builds: one per etcd cluster.
	// Nil: oracle.Shared(), the process-wide registry.
	OracleRegistry *oracle.Registry

	// DialOracle dials the etcd client a registry's revision oracle uses
	// (and, under DirectEtcdWatch, each cache's own client)
	// for a cluster it has not seen, the first time a cache of that
	// cluster is built. Nil: a gRPC client on the transport's endpoints
	// and TLS files. A process that embeds its etcd server can pass an
	// in-process client (go.etcd.io/etcd/server/v3/etcdserver/api/v3client):
	// its Range is the server's own linearizable read, without the gRPC
	// transport on either side. The registry owns the client and closes
	// it with the last cache of the cluster.
	DialOracle func(storagebackend.TransportConfig) (*clientv3.Client, error)
}

// resolved is Options after defaults and gates were applied.
type resolved struct {
	Options
	consistentReads bool
	freshRVZero     bool
	// listFromSnapshots is upstream's ListFromCacheSnapshot gate: when
	// off, Exact LISTs and continuations go to etcd, as with upstream's
	// cacher. Read once, in New.
	listFromSnapshots bool
	// shardedLists is upstream's alpha ShardedListAndWatch gate: LISTs
	// served from the cache carry the shard selector they were filtered by
	// (ListMeta.ShardInfo), as upstream's cacher sets it. Read once, in
	// New.
	shardedLists bool
	// detectInconsistency is the CacheInconsistencyDetection gate.
	detectInconsistency bool
	// directEtcdWatch is the DirectEtcdWatch gate.
	directEtcdWatch bool
	// revisionsFromWrites is the RevisionsFromWrites gate.
	revisionsFromWrites bool
	// progressFromOwnWrites is the ProgressFromOwnWrites gate.
	progressFromOwnWrites bool
}

func (o Options) resolve(storageWindow time.Duration) (resolved, error) {
	var errs []error
	if o.EventsHistoryWindow < 0 {
		errs = append(errs, fmt.Errorf("EventsHistoryWindow %v is negative", o.EventsHistoryWindow))
	}
	if o.HistoryCapacity < 0 {
		errs = append(errs, fmt.Errorf("HistoryCapacity %d is negative", o.HistoryCapacity))
	}
	if o.ConsistentReadTimeout < 0 {
		errs = append(errs, fmt.Errorf("ConsistentReadTimeout %v is negative", o.ConsistentReadTimeout))
	}
	if o.InconsistencyCheckPeriod < 0 {
		errs = append(errs, fmt.Errorf("InconsistencyCheckPeriod %v is negative", o.InconsistencyCheckPeriod))
	}
	if o.WatcherQueueCapacity < 0 || o.WatcherResultBuffer < 0 || o.ListPageSize < 0 || o.BookmarkFrequency < 0 {
		errs = append(errs, errors.New("WatcherQueueCapacity, WatcherResultBuffer, ListPageSize and BookmarkFrequency must not be negative"))
	}
	if math.IsNaN(o.FallbackBudget) || math.IsInf(o.FallbackBudget, 0) {
		errs = append(errs, fmt.Errorf("FallbackBudget %v is not a number of cached objects", o.FallbackBudget))
	}
	switch o.TimeoutAction {
	case "", TimeoutFallback, TimeoutReject:
	default:
		errs = append(errs, fmt.Errorf("TimeoutAction %q is neither %q nor %q", o.TimeoutAction, TimeoutFallback, TimeoutReject))
	}
	if len(errs) > 0 {
		return resolved{}, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	if o.EventsHistoryWindow == 0 {
		o.EventsHistoryWindow = storageWindow
		if o.EventsHistoryWindow <= 0 {
			o.EventsHistoryWindow = DefaultEventsHistoryWindow
		}
	}
	if o.HistoryCapacity == 0 {
		o.HistoryCapacity = DefaultHistoryCapacity
	}
	if o.ConsistentReadTimeout == 0 {
		o.ConsistentReadTimeout = DefaultConsistentReadTimeout
	}
	if o.TimeoutAction == "" {
		o.TimeoutAction = TimeoutFallback
	}
	if o.FallbackBudget == 0 {
		o.FallbackBudget = DefaultFallbackBudget
	}
	if o.InconsistencyCheckPeriod == 0 {
		o.InconsistencyCheckPeriod = DefaultInconsistencyCheckPeriod
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Metrics == nil {
		o.Metrics = metrics.For
	}
	r := resolved{Options: o}
	r.consistentReads = gate(o.ConsistentReadsFromCache, features.ConsistentReadsFromCache)
	r.freshRVZero = gate(o.FreshResourceVersionZero, features.FreshResourceVersionZero)
	r.detectInconsistency = gate(o.InconsistencyDetection, features.CacheInconsistencyDetection)
	r.directEtcdWatch = gate(o.DirectEtcdWatch, features.DirectEtcdWatch)
	r.revisionsFromWrites = gate(o.RevisionsFromWrites, features.RevisionsFromWrites)
	r.progressFromOwnWrites = gate(o.ProgressFromOwnWrites, features.ProgressFromOwnWrites)
	r.listFromSnapshots = utilfeature.DefaultFeatureGate.Enabled(apiserverfeatures.ListFromCacheSnapshot)
	r.shardedLists = utilfeature.DefaultFeatureGate.Enabled(apiserverfeatures.ShardedListAndWatch)
	return r, nil
}

func gate(override *bool, g featuregate.Feature) bool {
	if override != nil {
		return *override
	}
	return features.Enabled(g)
}

// withGatesResolved pins every gate override to its current value, so that
// later changes of the global gate do not affect caches built from o.
func (o Options) withGatesResolved() Options {
	cr := gate(o.ConsistentReadsFromCache, features.ConsistentReadsFromCache)
	fz := gate(o.FreshResourceVersionZero, features.FreshResourceVersionZero)
	id := gate(o.InconsistencyDetection, features.CacheInconsistencyDetection)
	de := gate(o.DirectEtcdWatch, features.DirectEtcdWatch)
	rw := gate(o.RevisionsFromWrites, features.RevisionsFromWrites)
	pw := gate(o.ProgressFromOwnWrites, features.ProgressFromOwnWrites)
	o.ConsistentReadsFromCache = &cr
	o.FreshResourceVersionZero = &fz
	o.InconsistencyDetection = &id
	o.DirectEtcdWatch = &de
	o.RevisionsFromWrites = &rw
	o.ProgressFromOwnWrites = &pw
	return o
}
