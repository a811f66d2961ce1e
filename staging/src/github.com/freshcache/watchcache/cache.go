package watchcache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/freshcache/watchcache/freshness"
	"github.com/freshcache/watchcache/internal/consistency"
	"github.com/freshcache/watchcache/internal/driver"
	"github.com/freshcache/watchcache/internal/fanout"
	"github.com/freshcache/watchcache/internal/freshread"
	"github.com/freshcache/watchcache/internal/history"
	"github.com/freshcache/watchcache/internal/misplaced"
	"github.com/freshcache/watchcache/internal/plan"
	"github.com/freshcache/watchcache/internal/ready"
	"github.com/freshcache/watchcache/internal/reflector"
	"github.com/freshcache/watchcache/internal/store"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

// Config is what the cache needs to know about one resource. The storage
// decorator fills it from its arguments; tests fill it directly.
type Config struct {
	// Storage is the underlying etcd3 store. Writes and delegated reads go
	// to it, and the reflector lists and watches through it.
	Storage storage.Interface
	// Versioner defaults to storage.APIObjectVersioner{}.
	Versioner     storage.Versioner
	GroupResource schema.GroupResource
	// ResourcePrefix is the key prefix of the resource, e.g. "/pods".
	ResourcePrefix string
	KeyFunc        func(runtime.Object) (string, error)
	NewFunc        func() runtime.Object
	NewListFunc    func() runtime.Object
	GetAttrsFunc   storage.AttrFunc
	// IndexerFuncs are watch triggers; only one is used, as upstream does.
	IndexerFuncs storage.IndexerFuncs
	// Indexers are the secondary indexes used by LIST (names "f:<field>"
	// or "l:<label>", as SelectionPredicate.MatcherIndex produces).
	Indexers *cache.Indexers

	// Oracle supplies the revisions of consistent reads. Share one per etcd
	// cluster (an *oracle.Oracle from oracle.Registry). Nil: the cache
	// builds its own over Storage.GetCurrentResourceVersion (a
	// linearizable one-key read), coalesced for this resource only. The
	// cache does not close a supplied Oracle.
	Oracle RevisionSource

	// Writes hears of the cache's writes just before each goes to etcd, so
	// that its revision can answer the reads waiting then
	// (RevisionsFromWrites); its etcd cluster must be the storage's.
	// Usually the *oracle.Oracle that is Oracle (UseOracle sets both). Nil:
	// writes answer no read; when Oracle is nil too, the cache's own
	// Oracle hears them.
	Writes WriteAnnouncer

	// Ledger is the record of this process's writes to the storage's etcd
	// cluster (ProgressFromOwnWrites), usually Oracle's own
	// (oracle.Oracle.Ledger; UseOracle sets it). Nil: the cache asks etcd
	// for progress whenever it lags a read; when Oracle is nil too, the
	// cache uses its own Oracle's ledger.
	Ledger *oracle.Ledger

	// ConsistentReadsDisabled, if not empty, is why this cache must not
	// serve consistent reads from memory (metrics.ReasonEtcdVersion: an
	// etcd member has broken progress notifications). They are delegated
	// to etcd, and the consistent_reads_disabled gauge says so. The storage
	// decorator sets it from the etcd version guard.
	ConsistentReadsDisabled string

	// StoragePrefix is storagebackend.Config.Prefix ("/registry"), under
	// which the etcd3 store lays out ResourcePrefix's keys. The cache needs
	// it to name the etcd keys of its writes in the cluster's ledger
	// (ProgressFromOwnWrites); empty leaves the cache out of the ledger.
	StoragePrefix string
}

// UseOracle makes o the cache's revision source, the hearer of its writes
// and its ledger: the three capabilities an *oracle.Oracle from
// oracle.Registry offers a cache of the cluster it reads.
func (c *Config) UseOracle(o *oracle.Oracle) {
	c.Oracle, c.Writes, c.Ledger = o, o, o.Ledger()
}

// RevisionSource hands out etcd revisions for consistent reads.
// *oracle.Oracle implements it: RevisionFor returns a revision R from a
// linearizable fetch issued after the call began, coalesced with every
// other caller (one fetch in flight per etcd cluster), or from a write of
// this process sent after it began (WriteAnnouncer); reads is how many
// client reads the call stands for, for the coalescing metrics. An error
// wrapping oracle.ErrFetchTimedOut says etcd gave no answer within the
// source's own time limit (at least a round trip), as opposed to refusing:
// a watch waiting for its revision asks again instead of failing.
//
// RecentRevision returns, without sending anything, a revision from a
// fetch or write sent at most maxAge ago and already answered, so that
// every write that completed more than maxAge before the call is at or
// below it; false if there is none (bounded rv=0 reads,
// Options.ZeroReadStaleness). A source may always answer false.
type RevisionSource interface {
	RevisionFor(ctx context.Context, reads int) (int64, error)
	RecentRevision(maxAge time.Duration) (int64, bool)
}

// ErrStopped is returned by waits on a stopped cache.
var ErrStopped = driver.ErrStopped

// TraceRegionWait names the execution-trace region (runtime/trace) around a
// read's freshness wait: from registering with the Machine until the reader
// runs again with a verdict. The reader blocks inside it, so a trace shows
// both when the driver released it and when it got a CPU back.
// freshcache-bench trace-wait splits the wait at that point.
const TraceRegionWait = driver.TraceRegion

// Cache is freshcache's storage.Interface. See the package documentation.
type Cache struct {
	opts    resolved
	cfg     Config
	prefix  string // ResourcePrefix ending in "/"
	metrics metrics.Recorder

	indexFuncs  map[string]store.IndexFunc
	triggerName string
	triggerFunc storage.IndexerFunc

	history   *history.History
	fanout    *fanout.Fanout
	reflector *reflector.Reflector

	// latest is the newest published snapshot. It is written under mu by the
	// reflector goroutine and read without a lock by everyone.
	latest atomic.Pointer[store.Snapshot]
	// readiness is whether the state is current (internal/ready).
	readiness *ready.State
	// stop is closed by Stop; wg tracks the goroutines it ends.
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	// driver runs the freshness protocol (internal/driver); its lock is a leaf.
	driver *driver.Driver
	// ownWrite is the revision of the newest write through this cache that
	// etcd acknowledged (wrote): a bounded rv=0 read waits for it, so that
	// a client reads its own writes at rv=0 (internal/freshread).
	ownWrite atomic.Uint64
	// fresh carries out the reads that need freshness, the fallbacks to
	// etcd and their budget (internal/freshread).
	fresh *freshread.Reader
	// checker is the inconsistency detector (detector.go), nil when the
	// CacheInconsistencyDetection gate is off.
	checker *consistency.Checker
	// closeOracle releases an Oracle the cache built itself, or is nil.
	closeOracle func()
	// announcer is told about the cache's writes (RevisionsFromWrites), or
	// is nil.
	announcer WriteAnnouncer
	// ledger is the cluster's record of this process's writes
	// (ProgressFromOwnWrites; ledger.go), or nil. storageRoot and
	// etcdPrefix are the etcd key of the storage prefix and of the
	// resource's keys, both ending in "/".
	ledger                  *oracle.Ledger
	storageRoot, etcdPrefix string
	// moved is closed, and replaced, whenever the published state moves:
	// for the settles waiting on the ledger, any number at once (ledger.go).
	moved struct {
		sync.Mutex
		ch chan struct{}
	}
	// gates shape LIST planning; resolved once in New.
	gates plan.Gates
	// disabledReason is Config.ConsistentReadsDisabled.
	disabledReason string
	// misplaced are keys written through the cache at which the cache and
	// etcd disagree (internal/misplaced); reads touching them go to etcd.
	misplaced misplaced.Keys

	// mu is the state lock. It serializes the reflector's writes (store,
	// history, snapshot publication, dispatch) with watch registration, so
	// that a new watcher's initial state and its live events meet exactly.
	// Lock order: mu, then fanout's lock, then a watcher's lock.
	mu struct {
		sync.Mutex
		// writer is the mutable state; only the reflector goroutine calls
		// its mutating methods, always under mu, except Advance, which the
		// catch-up on the ledger (advance) calls too.
		writer *store.Writer
		// listed counts Replace calls, to tell the first list from relists.
		listed int
	}
	// lastPublished is the last published revision, guarded by mu; only
	// the invariants build reads it.
	lastPublished uint64 //nolint:unused // read and written by invariants_on.go only
}

var _ storage.Interface = (*Cache)(nil)

// New builds a cache for one resource and starts filling it. Call Stop to
// release it.
func New(opts Options, cfg Config) (*Cache, error) {
	r, err := opts.resolve(0)
	if err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Versioner == nil {
		cfg.Versioner = storage.APIObjectVersioner{}
	}
	c := &Cache{
		opts:           r,
		cfg:            cfg,
		prefix:         strings.TrimSuffix(cfg.ResourcePrefix, "/") + "/",
		metrics:        r.Metrics(cfg.GroupResource),
		readiness:      ready.New(r.Clock),
		stop:           make(chan struct{}),
		gates:          plan.Gates{Consistent: r.consistentReads, FreshZero: r.freshRVZero, Snapshots: r.listFromSnapshots},
		disabledReason: cfg.ConsistentReadsDisabled,
	}
	c.buildState()
	// With the version guard tripped, no wait may rest on a progress
	// notification (etcd#15220 lets one run ahead of events).
	untrusted := c.disabledReason != ""
	c.reflector = c.newReflector(untrusted)
	if err := c.buildDriver(untrusted); err != nil {
		return nil, err
	}
	if c.disabledReason != "" {
		klog.InfoS("freshcache: consistent reads are delegated to etcd", "resource", cfg.GroupResource.String(), "reason", c.disabledReason)
		c.metrics.ConsistentReadsDisabled(c.disabledReason)
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.SizeBasedListCostEstimate) {
		// As upstream's cacher: the etcd3 store estimates object sizes from
		// keys, which the cache lists without asking etcd.
		if err := cfg.Storage.EnableResourceSizeEstimation(c.keys); err != nil {
			return nil, fmt.Errorf("watchcache: resource size estimation: %w", err)
		}
	}
	if r.detectInconsistency {
		c.checker = c.newChecker()
	}
	c.start()
	return c, nil
}

// check refuses a Config that lacks what every cache needs.
func (cfg Config) check() error {
	if cfg.Storage == nil || cfg.KeyFunc == nil || cfg.NewFunc == nil || cfg.NewListFunc == nil || cfg.GetAttrsFunc == nil {
		return fmt.Errorf("%w: Config needs Storage, KeyFunc, NewFunc, NewListFunc and GetAttrsFunc", ErrInvalidOptions)
	}
	if cfg.ResourcePrefix == "" || cfg.ResourcePrefix == "/" || !strings.HasPrefix(cfg.ResourcePrefix, "/") {
		return fmt.Errorf("%w: ResourcePrefix %q must start with / and name a resource", ErrInvalidOptions, cfg.ResourcePrefix)
	}
	return nil
}

// buildState makes the cache's empty state: the indexes and the watch
// trigger, the store and its first snapshot, the history and the fanout.
func (c *Cache) buildState() {
	cfg, r := c.cfg, c.opts
	if cfg.Indexers != nil && len(*cfg.Indexers) > 0 {
		c.indexFuncs = make(map[string]store.IndexFunc, len(*cfg.Indexers))
		for name, fn := range *cfg.Indexers {
			fn := fn
			c.indexFuncs[name] = func(obj runtime.Object) ([]string, error) { return fn(obj) }
		}
	}
	for name, fn := range cfg.IndexerFuncs {
		// Upstream supports exactly one trigger; pick deterministically.
		if c.triggerFunc == nil || name < c.triggerName {
			c.triggerName, c.triggerFunc = name, fn
		}
	}
	c.mu.writer = store.NewWriter(c.indexFuncs)
	c.latest.Store(c.mu.writer.Snapshot())
	c.history = history.New(history.Options{
		Window:   r.EventsHistoryWindow,
		Capacity: r.HistoryCapacity,
		Now:      r.Clock.Now,
	})
	c.fanout = fanout.New(fanout.Config{
		Versioner:         cfg.Versioner,
		NewFunc:           cfg.NewFunc,
		TriggerFunc:       c.triggerFunc,
		QueueCapacity:     r.WatcherQueueCapacity,
		ResultBuffer:      r.WatcherResultBuffer,
		BookmarkFrequency: r.BookmarkFrequency,
		Clock:             r.Clock,
		Metrics:           c.metrics,
	})
}

// newReflector makes the goroutine that feeds the cache: a list and watch
// through the store.
func (c *Cache) newReflector(untrusted bool) *reflector.Reflector {
	cfg, r := c.cfg, c.opts
	return reflector.New(reflector.Config{
		Storage:           cfg.Storage,
		Versioner:         cfg.Versioner,
		Prefix:            c.prefix,
		NewListFunc:       cfg.NewListFunc,
		Sink:              (*sink)(c),
		PageSize:          r.ListPageSize,
		Clock:             r.Clock,
		Name:              cfg.GroupResource.String(),
		UntrustedProgress: untrusted,
		RevisionPending:   func(rv uint64) { c.driver.RevisionPending(rv) },
		Metrics:           c.metrics,
		LeaderBackoff:     r.LeaderBackoff,
	})
}

// buildDriver makes the freshness driver with the cache's capabilities:
// its revision source (Config.Oracle, or an Oracle of its own over the
// store; consistent LISTs need one whatever the gates say), the hearer of
// its writes and the ledger, each only where the gates and the guard allow
// it.
func (c *Cache) buildDriver(untrusted bool) error {
	cfg, r := c.cfg, c.opts
	source := cfg.Oracle
	if source == nil {
		o, err := oracle.NewFromFunc(func(ctx context.Context) (int64, error) {
			rv, err := cfg.Storage.GetCurrentResourceVersion(ctx)
			return int64(rv), err
		}, oracle.Options{})
		if err != nil {
			return fmt.Errorf("watchcache: revision oracle: %w", err)
		}
		source, c.closeOracle = o, o.Close
		cfg.Writes, cfg.Ledger = o, o.Ledger()
	}
	if cfg.Writes != nil && source != nil && r.revisionsFromWrites {
		c.announcer = cfg.Writes
		if cfg.Ledger != nil && r.progressFromOwnWrites && !untrusted && cfg.StoragePrefix != "" {
			c.ledger = cfg.Ledger
			c.storageRoot = reflector.StorageRoot(cfg.StoragePrefix)
			c.etcdPrefix = reflector.EtcdKey(cfg.StoragePrefix, c.prefix)
		}
	}
	var settle func(context.Context, int64)
	if c.ledger != nil {
		settle = c.settle
	}
	c.driver = driver.New(driver.Config{
		Source:     source,
		Progress:   c.reflector.RequestProgress,
		Clock:      r.Clock,
		Timeout:    r.ConsistentReadTimeout,
		Metrics:    c.metrics,
		Name:       cfg.GroupResource.String(),
		NoProgress: untrusted,
		Settle:     settle,
		Stop:       c.stop,
		PanicOnBug: invariantsEnabled,
	})
	c.fresh = freshread.New(freshread.Config{
		Driver:            c.driver,
		Metrics:           c.metrics,
		Clock:             r.Clock,
		Resource:          cfg.GroupResource,
		Timeout:           r.ConsistentReadTimeout,
		Reject:            r.TimeoutAction == TimeoutReject,
		ZeroReadStaleness: r.ZeroReadStaleness,
		FallbackBudget:    r.FallbackBudget,
		CacheRV:           c.RV,
		OwnWrite:          c.ownWrite.Load,
		Cached:            func() int { return c.snapshot().Len() },
	})
	return nil
}

func (c *Cache) start() {
	c.wg.Add(3)
	go metrics.Labeled(metrics.ProfileReflector, func() { defer c.wg.Done(); c.reflector.Run(c.stop) })
	go metrics.Labeled(metrics.ProfileFanout, func() { defer c.wg.Done(); c.fanout.Run(c.stop) })
	go metrics.Labeled(metrics.ProfileDriver, func() { defer c.wg.Done(); c.driver.Run() })
	if c.checker != nil {
		c.wg.Add(1)
		go metrics.Labeled(metrics.ProfileConsistency, func() { defer c.wg.Done(); c.checker.Run(c.stop) })
	}
}

// Stop ends the cache's goroutines and closes every watcher. It is
// idempotent and returns once they have exited.
func (c *Cache) Stop() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.wg.Wait()
	c.fanout.TerminateAll("")
	if c.closeOracle != nil {
		c.closeOracle()
	}
}

// Ready reports whether the state is current: a list is in and the
// reflector has not had to list again since.
func (c *Cache) Ready() bool { return c.readiness.IsReady() }

// Wait blocks until the cache is ready, ctx is done or the cache stops.
func (c *Cache) Wait(ctx context.Context) error { return c.readiness.Wait(ctx, c.stop, ErrStopped) }

// ReadinessCheck implements storage.Interface.
func (c *Cache) ReadinessCheck() error {
	if !c.Ready() {
		return storage.ErrStorageNotReady
	}
	return nil
}

// RV is the cache revision: every event up to it has been applied.
func (c *Cache) RV() uint64 { return c.latest.Load().RV() }

// snapshot returns the newest state.
func (c *Cache) snapshot() *store.Snapshot { return c.latest.Load() }

// publishLocked makes snap the newest state. Reads waiting for a revision
// are released by the freshness driver, which the reflector informs after
// publication.
func (c *Cache) publishLocked(snap *store.Snapshot) {
	c.latest.Store(snap)
	c.metrics.ResourceVersion(snap.RV())
	checkInvariants(c, snap)
}

func (c *Cache) newObject(obj runtime.Object, rv uint64) (*store.Object, error) {
	key, err := c.cfg.KeyFunc(obj)
	if err != nil {
		return nil, fmt.Errorf("watchcache: key of %T: %w", obj, err)
	}
	l, f, err := c.cfg.GetAttrsFunc(obj)
	if err != nil {
		return nil, fmt.Errorf("watchcache: attributes of %q: %w", key, err)
	}
	return &store.Object{Key: key, Obj: obj, RV: rv, Labels: l, Fields: store.NewFields(f)}, nil
}

// FreshnessStatus reports the state of the cache's freshness protocol: the
// cache revision as the Machine knows it, fetches and progress requests in
// flight, and reads waiting at each stage. For debugging and tests.
func (c *Cache) FreshnessStatus() freshness.Status { return c.driver.Status() }
