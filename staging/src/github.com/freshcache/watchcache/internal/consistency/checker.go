package consistency

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/internal/store"
)

// Defaults of Config.
const (
	// DefaultPeriod is upstream's consistency.CheckPeriod: the default
	// etcd compaction interval, so that the revision compared is rarely
	// compacted before the round ends, and far above a LIST's latency.
	DefaultPeriod = 5 * time.Minute
	// DefaultJitter spreads rounds over [Period, Period*(1+Jitter)), as
	// upstream does, so that the caches of one server do not list etcd in
	// the same instant.
	DefaultJitter = 0.5
	// DefaultPageSize is upstream's checker page size.
	DefaultPageSize = 10000
	// DefaultRoundTimeout bounds one round, as the apiserver bounds a LIST.
	DefaultRoundTimeout = time.Minute
)

// Result says how a round ended.
type Result string

// Results of a round.
const (
	// Match: the cache held exactly etcd's items at the revision.
	Match Result = "match"
	// Mismatch: it did not; Report.First says where.
	Mismatch Result = "mismatch"
	// Skipped: there was nothing sound to compare (the cache was not
	// ready, or etcd had compacted the revision before the round read it).
	Skipped Result = "skipped"
	// Error: etcd could not be listed, or answered something unusable.
	Error Result = "error"
)

// Report is the outcome of one round.
type Report struct {
	Result Result
	// RV is the revision compared (0 if the round was skipped before
	// taking one).
	RV uint64
	// Generation is Target's, handed back so that the caller can tell
	// whether the cache was replaced since the round took its snapshot.
	Generation uint64
	// Outcome holds the digests and the first difference (Match and
	// Mismatch only).
	Outcome
	// Pages is the number of GetList calls the round made.
	Pages int
	// Err says why the round was skipped or failed.
	Err error
}

// Lister is the part of storage.Interface the checker uses: the etcd3
// store of the resource.
type Lister interface {
	GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error
}

// Target is what a round compares: a state of the cache at a revision it
// has completely applied.
type Target struct {
	// Snapshot is the state; its RV must be a complete revision (every
	// event up to it applied, none after it).
	Snapshot *store.Snapshot
	// Generation identifies the list the state descends from (it changes
	// when the cache relists); it is passed through to the Report.
	Generation uint64
}

// Config configures a Checker.
type Config struct {
	// Lister lists etcd: the resource's etcd3 store.
	Lister Lister
	// Prefix is the resource's key prefix, ending in "/".
	Prefix      string
	NewListFunc func() runtime.Object
	// KeyFunc and Versioner turn etcd's objects into Items; they must be
	// the ones the cache keys and versions its objects with.
	KeyFunc   func(runtime.Object) (string, error)
	Versioner storage.Versioner
	// Target returns what to compare, or an error (wrapping ErrNotReady
	// when the round should be skipped).
	Target func() (Target, error)
	// Report receives the outcome of every round that Run starts, on
	// Run's goroutine. Nil: outcomes are dropped.
	Report func(Report)

	// PageSize is the Limit of each GetList. Zero: DefaultPageSize.
	PageSize int64
	// Period is the pause between the end of one round and the start of
	// the next (and before the first). Zero: DefaultPeriod.
	Period time.Duration
	// Jitter stretches each pause by up to this fraction. Zero:
	// DefaultJitter; negative: none.
	Jitter float64
	// RoundTimeout bounds one round. Zero: DefaultRoundTimeout.
	RoundTimeout time.Duration
	// Clock times the pauses. Nil: the real clock.
	Clock clock.Clock
}

// ErrNotReady is wrapped by a Target error that means "skip this round".
var ErrNotReady = errors.New("watchcache/consistency: cache not ready")

// Checker compares a cache with etcd. See the package documentation.
type Checker struct {
	cfg Config
}

// New returns a Checker; call Run to start its rounds.
func New(cfg Config) *Checker {
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	switch {
	case cfg.Jitter == 0:
		cfg.Jitter = DefaultJitter
	case cfg.Jitter < 0:
		cfg.Jitter = 0
	}
	if cfg.RoundTimeout <= 0 {
		cfg.RoundTimeout = DefaultRoundTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Checker{cfg: cfg}
}

// Run runs a round after every pause until stop is closed, one round at a
// time: the pause starts when the previous round has ended, so rounds never
// overlap and a slow etcd slows them down instead of piling them up. A
// round in flight when stop closes is cancelled and not reported.
func (c *Checker) Run(stop <-chan struct{}) {
	// ctx ends when stop closes or Run returns.
	ctx, cancel := context.WithCancel(wait.ContextForChannel(stop))
	defer cancel()
	for {
		t := c.cfg.Clock.NewTimer(c.pause())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		rep := c.Check(ctx)
		if ctx.Err() != nil {
			return
		}
		if c.cfg.Report != nil {
			c.cfg.Report(rep)
		}
	}
}

// pause is the time until the next round.
func (c *Checker) pause() time.Duration {
	if c.cfg.Jitter == 0 {
		// wait.Jitter takes a factor of 0 to mean 1.
		return c.cfg.Period
	}
	return wait.Jitter(c.cfg.Period, c.cfg.Jitter)
}

// Check runs one round: it takes the Target and lists etcd at exactly the
// target's revision, page by page, comparing as the pages arrive.
func (c *Checker) Check(ctx context.Context) Report {
	target, err := c.cfg.Target()
	if err != nil {
		res := Error
		if errors.Is(err, ErrNotReady) {
			res = Skipped
		}
		return Report{Result: res, Err: err}
	}
	snap := target.Snapshot
	rep := Report{RV: snap.RV(), Generation: target.Generation}
	if rep.RV == 0 {
		rep.Result, rep.Err = Skipped, fmt.Errorf("%w: no list yet", ErrNotReady)
		return rep
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RoundTimeout)
	defer cancel()
	cmp := Compare(SnapshotItems(snap))
	defer cmp.Close()
	if err := c.listEtcd(ctx, rep.RV, cmp, &rep.Pages); err != nil {
		rep.Result, rep.Err = Error, err
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			// etcd compacted the revision: there is nothing to compare
			// with, which says nothing about the cache.
			rep.Result = Skipped
		}
		return rep
	}
	out, err := cmp.Finish()
	if err != nil {
		rep.Result, rep.Err = Error, err
		return rep
	}
	rep.Outcome = out
	rep.Result = Match
	if out.First != nil {
		rep.Result = Mismatch
	}
	return rep
}

// listEtcd feeds cmp with etcd's items at exactly rv: one GetList per page,
// the first at ResourceVersion=rv (Exact), the rest with the continue token,
// which carries rv.
func (c *Checker) listEtcd(ctx context.Context, rv uint64, cmp *Comparison, pages *int) error {
	opts := storage.ListOptions{
		ResourceVersion:      strconv.FormatUint(rv, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		Recursive:            true,
		Predicate:            storage.Everything,
	}
	opts.Predicate.Limit = c.cfg.PageSize
	for {
		list := c.cfg.NewListFunc()
		*pages++
		if err := c.cfg.Lister.GetList(ctx, c.cfg.Prefix, opts, list); err != nil {
			return fmt.Errorf("list %s at %d: %w", c.cfg.Prefix, rv, err)
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			return err
		}
		got, err := c.cfg.Versioner.ParseResourceVersion(lm.GetResourceVersion())
		if err != nil {
			return err
		}
		if got != rv {
			return fmt.Errorf("list %s at %d: etcd answered at %d", c.cfg.Prefix, rv, got)
		}
		err = meta.EachListItem(list, func(obj runtime.Object) error {
			key, err := c.cfg.KeyFunc(obj)
			if err != nil {
				return err
			}
			orv, err := c.cfg.Versioner.ObjectResourceVersion(obj)
			if err != nil {
				return err
			}
			return cmp.Add(Item{Key: key, RV: orv})
		})
		if err != nil {
			return err
		}
		cont := lm.GetContinue()
		if cont == "" {
			return nil
		}
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
		opts.Predicate.Continue = cont
	}
}
