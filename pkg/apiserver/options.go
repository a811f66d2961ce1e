package apiserver

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/watchcache"
)

// Implementation names a watch cache.
type Implementation string

const (
	// Freshcache is the watch cache of this repository.
	Freshcache Implementation = "freshcache"
	// Upstream is k8s.io/apiserver's cacher, as shipped in kube-apiserver.
	Upstream Implementation = "upstream"
)

// Implementations lists the valid values of --watch-cache-implementation.
var Implementations = []Implementation{Freshcache, Upstream}

// DefaultImplementation is the cache used when the flag is not given.
const DefaultImplementation = Freshcache

// Options are the flags this package adds to kube-apiserver.
type Options struct {
	// WatchCacheImplementation selects the watch cache.
	WatchCacheImplementation Implementation
	// ConsistentReadTimeout bounds how long a freshcache read waits for the
	// cache to reach the revision it needs.
	ConsistentReadTimeout time.Duration
	// ConsistentReadTimeoutAction is what such a read does then: serve from
	// etcd with a quorum read, or answer 429 with Retry-After.
	ConsistentReadTimeoutAction watchcache.TimeoutAction
	// ConsistentReadFallbackBudget bounds the reads that fall back to etcd
	// at once, per resource, as a multiple of the objects its cache holds;
	// negative: unbounded.
	ConsistentReadFallbackBudget float64
	// ResourceVersionZeroMaxStaleness bounds how far behind its arrival a
	// resourceVersion=0 read under FreshResourceVersionZero may be; 0
	// makes it as strict as resourceVersion="".
	ResourceVersionZeroMaxStaleness time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		WatchCacheImplementation:        DefaultImplementation,
		ConsistentReadTimeout:           watchcache.DefaultConsistentReadTimeout,
		ConsistentReadTimeoutAction:     watchcache.TimeoutFallback,
		ConsistentReadFallbackBudget:    watchcache.DefaultFallbackBudget,
		ResourceVersionZeroMaxStaleness: watchcache.DefaultZeroReadStaleness,
	}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Var(implementationValue{&o.WatchCacheImplementation}, "watch-cache-implementation",
		fmt.Sprintf("The watch cache that serves cached resources: one of %s. "+
			"It applies only where the watch cache is on (see --watch-cache and --watch-cache-sizes).",
			joinImplementations()))
	fs.DurationVar(&o.ConsistentReadTimeout, "consistent-read-timeout", o.ConsistentReadTimeout,
		"How long a read served by freshcache may wait for the cache to be as fresh as the request needs. "+
			"After that, --consistent-read-timeout-action applies. Stale data is never served. "+
			"With fallback, a consistent watch (a watch-list at resourceVersion=\"\") first waits for etcd's current revision "+
			"for as long as the watch lasts, as upstream's cacher does, and this bounds only the wait for the cache to reach it.")
	fs.Var(timeoutActionValue{&o.ConsistentReadTimeoutAction}, "consistent-read-timeout-action",
		"What a freshcache read does after --consistent-read-timeout: fallback (serve it from etcd with a quorum read; "+
			"a watch is never served from etcd and gets a too-large-resource-version error, "+
			"and a resourceVersion=0 list that the FreshResourceVersionZero gate made wait gets 429, since upstream never lists it from etcd) "+
			"or reject (answer 429 Too Many Requests with Retry-After; a watch's whole wait is then bounded too).")
	fs.Float64Var(&o.ConsistentReadFallbackBudget, "consistent-read-fallback-budget", o.ConsistentReadFallbackBudget,
		"With --consistent-read-timeout-action=fallback, how much a resource's reads served from etcd after a timeout may cover at once, "+
			"as a multiple of the objects its cache holds (a LIST covers the objects of its key range, a GET one). "+
			"A read that would go over it gets 429 Too Many Requests with Retry-After instead; the first fallback always goes. "+
			"It keeps an etcd stall from turning every waiting LIST into an etcd LIST at once. Negative: unbounded, as upstream's cacher. "+
			"Must not be 0 (use --consistent-read-timeout-action=reject to never fall back).")
	fs.DurationVar(&o.ResourceVersionZeroMaxStaleness, "resource-version-zero-max-staleness", o.ResourceVersionZeroMaxStaleness,
		"With the FreshResourceVersionZero feature gate, how far behind its arrival a resourceVersion=0 read may be: "+
			"it reflects every write acknowledged at least this long before it arrived, and is served at a revision "+
			"that a linearizable etcd read or a write of this kube-apiserver sent within that bound was answered with, "+
			"so resourceVersion=0 reads cost at most one etcd request per bound however many arrive. "+
			"A kube-apiserver cut off from etcd's leader answers none. 0: as fresh as resourceVersion=\"\" (one revision fetch issued after each read arrived). "+
			"resourceVersion=\"\" is never served with a bound.")
}

// Validate reports every problem with the options.
func (o *Options) Validate() []error {
	if o == nil {
		return nil
	}
	if err := validImplementation(o.WatchCacheImplementation); err != nil {
		return []error{err}
	}
	var errs []error
	if o.ConsistentReadTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--consistent-read-timeout=%v: must be positive", o.ConsistentReadTimeout))
	}
	if err := validTimeoutAction(o.ConsistentReadTimeoutAction); err != nil {
		errs = append(errs, err)
	}
	if o.ResourceVersionZeroMaxStaleness < 0 {
		errs = append(errs, fmt.Errorf("--resource-version-zero-max-staleness=%v: must not be negative (0 means none)", o.ResourceVersionZeroMaxStaleness))
	}
	if b := o.ConsistentReadFallbackBudget; b == 0 || math.IsNaN(b) || math.IsInf(b, 0) {
		errs = append(errs, fmt.Errorf("--consistent-read-fallback-budget=%v: must be positive (a multiple of the cached objects) or negative (unbounded); to never fall back use --consistent-read-timeout-action=reject", b))
	}
	return errs
}

func validImplementation(impl Implementation) error {
	for _, known := range Implementations {
		if impl == known {
			return nil
		}
	}
	return fmt.Errorf("--watch-cache-implementation: unknown value %q, valid values are %s", impl, joinImplementations())
}

func joinImplementations() string {
	names := make([]string, 0, len(Implementations))
	for _, impl := range Implementations {
		names = append(names, string(impl))
	}
	return strings.Join(names, "|")
}

// implementationValue makes the flag refuse unknown values at parse time,
// so the error names the flag and the valid values.
type implementationValue struct{ target *Implementation }

func (v implementationValue) String() string {
	if v.target == nil {
		return ""
	}
	return string(*v.target)
}

func (v implementationValue) Set(s string) error {
	impl := Implementation(strings.TrimSpace(s))
	if err := validImplementation(impl); err != nil {
		return fmt.Errorf("unknown watch cache implementation %q, valid values are %s", s, joinImplementations())
	}
	*v.target = impl
	return nil
}

func (v implementationValue) Type() string { return "string" }

func validTimeoutAction(a watchcache.TimeoutAction) error {
	switch a {
	case watchcache.TimeoutFallback, watchcache.TimeoutReject:
		return nil
	}
	return fmt.Errorf("--consistent-read-timeout-action: unknown value %q, valid values are %s|%s", a, watchcache.TimeoutFallback, watchcache.TimeoutReject)
}

type timeoutActionValue struct{ target *watchcache.TimeoutAction }

func (v timeoutActionValue) String() string {
	if v.target == nil {
		return ""
	}
	return string(*v.target)
}

func (v timeoutActionValue) Set(s string) error {
	a := watchcache.TimeoutAction(strings.TrimSpace(s))
	if err := validTimeoutAction(a); err != nil {
		return err
	}
	*v.target = a
	return nil
}

func (v timeoutActionValue) Type() string { return "string" }
