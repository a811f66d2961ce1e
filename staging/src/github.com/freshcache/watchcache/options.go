package watchcache

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/features"
	"github.com/freshcache/watchcache/internal/consistency"
	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

// DefaultFallbackBudget is Options.FallbackBudget's default: the fallback
// reads of one resource in flight together cover at most as many objects
// as its cache holds.
const DefaultFallbackBudget = 1.0

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
	// DefaultZeroReadStaleness is Options.ZeroReadStaleness's default:
	// upstream's progress-request period, the staleness upstream's cacher
	// itself accepts before it asks etcd for progress.
	DefaultZeroReadStaleness = 100 * time.Millisecond
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

	// ZeroReadStaleness bounds how far behind the read an rv=0 read that
	// FreshResourceVersionZero makes wait may be: it reflects every write
	// acknowledged at least this long before it arrived. It is served at
	// a revision that a fetch or a write of this process sent within the
	// bound was answered with (oracle.Oracle.RecentRevision), so rv=0
	// reads cost at most one revision fetch per bound whatever their rate,
	// and a member cut off from etcd's leader still cannot answer one
	// (its fetches fail, so no recent revision exists after the bound).
	// rv="" keeps its strict meaning. Zero:
	// DefaultZeroReadStaleness. Negative: none, rv=0 is as strict as
	// rv="". kube-apiserver: --resource-version-zero-max-staleness.
	ZeroReadStaleness time.Duration

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
	// way, upstream never sending one to etcd, unless the cache moved
	// toward the LIST's known revision during the timeout: it then waits
	// another timeout, for as long as the cache moves and the request
	// lasts, except under TimeoutReject.)
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

	// RevisionsFromWrites overrides the feature gate of the same name:
	// the cache's writes answer the consistent reads that wait for a
	// revision when they are sent (oracle.Write). Create and
	// GuaranteedUpdate take part only when the storage's transformer is
	// wrapped by AnnounceWrites, as NewStorageDecorator does. Nil: read
	// the gate once, when NewStorageDecorator is called (or in New).
	RevisionsFromWrites *bool

	// ProgressFromOwnWrites: a cache behind a read's revision advances to
	// it without a progress request when every revision in between is one
	// of this process's writes of another resource (oracle.Ledger). It
	// takes effect only with RevisionsFromWrites, an Oracle that has a
	// Ledger, and Config.StoragePrefix set. Nil: on. It is an option, not
	// a feature gate (it won its measurements and is on in every
	// kube-apiserver), for an embedder whose store breaks the first
	// assumption below, which must turn it off.
	//
	// It assumes that every write through the caches' storage changes one
	// key in one etcd transaction (upstream's etcd3 store: Create,
	// GuaranteedUpdate and Delete each send a single-key txn), and that
	// etcd's history never goes back under the running process (no
	// restore from a snapshot). A store that writes several keys per
	// transaction breaks the first: the ledger would take a revision that
	// also changed a cached key for a write of another resource. If either
	// assumption fails, the reflector notices when the event the cache
	// was moved past arrives, and relists (relists_total, reason
	// moved_past_event); until then reads may miss that event.
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

	// LeaderBackoff paces the watches etcd refuses while it has no
	// leader, shared by every cache given the same one (LeaderBackoff).
	// Give the caches of one etcd cluster one, so that their retries
	// together back off rather than each resource's on its own.
	// Nil: New gives the cache one of its own; NewStorageDecorator shares
	// one per etcd cluster among the caches it builds.
	LeaderBackoff *LeaderBackoff
}

// LeaderBackoff paces the watches etcd refuses while it has no leader,
// across the caches that share it (Options.LeaderBackoff).
type LeaderBackoff = reflector.LeaderBackoff

// NewLeaderBackoff returns a LeaderBackoff for the caches of one etcd
// cluster to share.
func NewLeaderBackoff() *LeaderBackoff { return reflector.NewLeaderBackoff() }

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
	// revisionsFromWrites is the RevisionsFromWrites gate.
	revisionsFromWrites bool
	// progressFromOwnWrites is Options.ProgressFromOwnWrites, resolved.
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
	// The zero value of each option means its default.
	o.HistoryCapacity = cmp.Or(o.HistoryCapacity, DefaultHistoryCapacity)
	o.ConsistentReadTimeout = cmp.Or(o.ConsistentReadTimeout, DefaultConsistentReadTimeout)
	o.ZeroReadStaleness = cmp.Or(o.ZeroReadStaleness, DefaultZeroReadStaleness)
	o.TimeoutAction = cmp.Or(o.TimeoutAction, TimeoutFallback)
	o.FallbackBudget = cmp.Or(o.FallbackBudget, DefaultFallbackBudget)
	o.InconsistencyCheckPeriod = cmp.Or(o.InconsistencyCheckPeriod, DefaultInconsistencyCheckPeriod)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Metrics == nil {
		o.Metrics = metrics.For
	}
	r := resolved{Options: o}
	o = o.withGatesResolved()
	r.consistentReads = *o.ConsistentReadsFromCache
	r.freshRVZero = *o.FreshResourceVersionZero
	r.detectInconsistency = *o.InconsistencyDetection
	r.revisionsFromWrites = *o.RevisionsFromWrites
	r.progressFromOwnWrites = o.ProgressFromOwnWrites == nil || *o.ProgressFromOwnWrites
	r.listFromSnapshots = utilfeature.DefaultFeatureGate.Enabled(apiserverfeatures.ListFromCacheSnapshot)
	r.shardedLists = utilfeature.DefaultFeatureGate.Enabled(apiserverfeatures.ShardedListAndWatch)
	return r, nil
}

// gateOverride is a gate with the Options field that overrides it.
type gateOverride struct {
	field **bool
	gate  func(features.Set) bool
}

// gateOverrides is the one table of the gates a cache's Options can
// override.
func (o *Options) gateOverrides() []gateOverride {
	return []gateOverride{
		{&o.ConsistentReadsFromCache, func(s features.Set) bool { return s.ConsistentReadsFromCache }},
		{&o.FreshResourceVersionZero, func(s features.Set) bool { return s.FreshResourceVersionZero }},
		{&o.InconsistencyDetection, func(s features.Set) bool { return s.CacheInconsistencyDetection }},
		{&o.RevisionsFromWrites, func(s features.Set) bool { return s.RevisionsFromWrites }},
	}
}

// withGatesResolved pins every gate override to its current value (the
// override's, else the gate's), in a bool of its own, so that later
// changes of the global gate or of the caller's bools do not affect
// caches built from o.
func (o Options) withGatesResolved() Options {
	now := features.Current()
	for _, g := range o.gateOverrides() {
		v := g.gate(now)
		if *g.field != nil {
			v = **g.field
		}
		*g.field = &v
	}
	return o
}
