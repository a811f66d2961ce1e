package apiserver

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
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
// It stays upstream until the freshcache cache is complete.
const DefaultImplementation = Upstream

// Options are the flags this package adds to kube-apiserver.
type Options struct {
	// WatchCacheImplementation selects the watch cache.
	WatchCacheImplementation Implementation
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{WatchCacheImplementation: DefaultImplementation}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Var(implementationValue{&o.WatchCacheImplementation}, "watch-cache-implementation",
		fmt.Sprintf("The watch cache that serves cached resources: one of %s. "+
			"It applies only where the watch cache is on (see --watch-cache and --watch-cache-sizes).",
			joinImplementations()))
}

// Validate reports every problem with the options.
func (o *Options) Validate() []error {
	if o == nil {
		return nil
	}
	if err := validImplementation(o.WatchCacheImplementation); err != nil {
		return []error{err}
	}
	// Refuse an implementation this build cannot install before any listener
	// or etcd client is created.
	if _, err := o.Decorator(); err != nil {
		return []error{err}
	}
	return nil
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
