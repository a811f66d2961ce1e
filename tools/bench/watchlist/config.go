package watchlist

import (
	"cmp"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	clusterbench "github.com/freshcache/freshcache/tools/bench/cluster"
	"github.com/freshcache/freshcache/tools/bench/configcheck"
)

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("watchlist: invalid config")

// Config is one run of the scenario. Its zero value means the defaults
// (DefaultConfig); Run fills zero fields with them, then validates.
type Config struct {
	// BinDir holds local-up and kube-apiserver (make build's _output/bin).
	BinDir string `json:"-"`
	// DataDir receives the local-up data directories; a temporary one,
	// removed afterwards, when empty.
	DataDir string `json:"-"`
	// Configs are the configurations measured one after the other, each on
	// a fresh cluster: clusterbench.Upstream, clusterbench.Freshcache,
	// clusterbench.FreshRV0.
	Configs []string `json:"configs"`
	// LocalUpArgs go to every local-up after the configuration's own flags.
	LocalUpArgs []string `json:"local_up_args,omitempty"`

	// Objects is the size of the huge resource: configmaps spread evenly
	// over HugeNamespaces namespaces.
	Objects        int `json:"objects"`
	HugeNamespaces int `json:"huge_namespaces"`
	// SmallObjects is how many configmaps and how many secrets the small
	// namespace holds: what the fresh reads GET and LIST.
	SmallObjects int `json:"small_objects"`
	// ValueBytes is the size of each object's one data value.
	ValueBytes int `json:"value_bytes"`
	// LoadWriters is the number of concurrent etcd Puts while loading.
	LoadWriters int `json:"load_writers"`

	// ReadClients is the number of closed-loop clients per read kind.
	ReadClients int `json:"read_clients"`
	// WatchLists is the number of concurrent WatchList loops in the
	// phases that have them.
	WatchLists int `json:"watchlists"`
	// WriteRate is the updates per second to each of the two resources,
	// straight to etcd, in every phase.
	WriteRate float64 `json:"write_rate"`

	// Phase lengths, in the order they run: writes only (the idle CPU),
	// unmeasured reads (warm-up), reads (A), reads with WatchLists (B),
	// WatchLists alone (C: their CPU per event).
	Idle      time.Duration `json:"idle"`
	Warmup    time.Duration `json:"warmup"`
	Baseline  time.Duration `json:"baseline"`
	Contended time.Duration `json:"contended"`
	Alone     time.Duration `json:"alone"`

	// WatchListTimeout bounds one WatchList; a slower one counts as an
	// error and the loop starts another.
	WatchListTimeout time.Duration `json:"watchlist_timeout"`
	// ReadyTimeout bounds local-up's start and the wait for the cache to
	// hold every loaded object.
	ReadyTimeout time.Duration `json:"ready_timeout"`

	// Progress receives one line per step; nil discards them.
	Progress io.Writer `json:"-"`
}

// DefaultConfig is the full scenario of kubernetes#138728: 100,000
// configmaps, 10 WatchLists, 30 s without and 60 s with them.
func DefaultConfig() Config {
	return Config{
		Configs:          slices.Clone(clusterbench.AllConfigs),
		Objects:          100_000,
		HugeNamespaces:   10,
		SmallObjects:     10,
		ValueBytes:       100,
		LoadWriters:      64,
		ReadClients:      2,
		WatchLists:       10,
		WriteRate:        10,
		Idle:             10 * time.Second,
		Warmup:           5 * time.Second,
		Baseline:         30 * time.Second,
		Contended:        60 * time.Second,
		Alone:            20 * time.Second,
		WatchListTimeout: 5 * time.Minute,
		ReadyTimeout:     10 * time.Minute,
	}
}

// ShortConfig is a smoke run: a few thousand objects, phases of seconds.
// Its numbers check the harness, not the caches.
func ShortConfig() Config {
	c := DefaultConfig()
	c.Objects = 3000
	c.HugeNamespaces = 3
	c.WatchLists = 3
	c.Idle = 2 * time.Second
	c.Warmup = 2 * time.Second
	c.Baseline = 5 * time.Second
	c.Contended = 8 * time.Second
	c.Alone = 5 * time.Second
	c.WatchListTimeout = time.Minute
	c.ReadyTimeout = 5 * time.Minute
	return c
}

// withDefaults fills every zero field from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if len(c.Configs) == 0 {
		c.Configs = d.Configs
	}
	c.Objects = cmp.Or(c.Objects, d.Objects)
	c.HugeNamespaces = cmp.Or(c.HugeNamespaces, d.HugeNamespaces)
	c.SmallObjects = cmp.Or(c.SmallObjects, d.SmallObjects)
	c.ValueBytes = cmp.Or(c.ValueBytes, d.ValueBytes)
	c.LoadWriters = cmp.Or(c.LoadWriters, d.LoadWriters)
	c.ReadClients = cmp.Or(c.ReadClients, d.ReadClients)
	c.WatchLists = cmp.Or(c.WatchLists, d.WatchLists)
	c.WriteRate = cmp.Or(c.WriteRate, d.WriteRate)
	c.Idle = cmp.Or(c.Idle, d.Idle)
	c.Warmup = cmp.Or(c.Warmup, d.Warmup)
	c.Baseline = cmp.Or(c.Baseline, d.Baseline)
	c.Contended = cmp.Or(c.Contended, d.Contended)
	c.Alone = cmp.Or(c.Alone, d.Alone)
	c.WatchListTimeout = cmp.Or(c.WatchListTimeout, d.WatchListTimeout)
	c.ReadyTimeout = cmp.Or(c.ReadyTimeout, d.ReadyTimeout)
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// Validate reports every field that cannot run, all at once. It does not
// fill defaults: a zero here is an error, so that a flag set to 0 is
// refused rather than silently replaced.
func (c Config) Validate() error {
	p := configcheck.New(ErrConfig)
	known := strings.Join(clusterbench.AllConfigs, ", ")
	p.Names(c.Configs, configcheck.NameRule{
		Known:   clusterbench.AllConfigs,
		Empty:   "configs: at least one of " + known,
		Unknown: "configs: unknown configuration %q (want " + known + ")",
		Twice:   "configs: %q given twice",
	})
	positive := map[string]int{
		"objects": c.Objects, "huge-namespaces": c.HugeNamespaces, "small-objects": c.SmallObjects,
		"value-bytes": c.ValueBytes, "load-writers": c.LoadWriters, "read-clients": c.ReadClients,
		"watchlists": c.WatchLists,
	}
	for _, name := range slices.Sorted(maps.Keys(positive)) {
		if positive[name] <= 0 {
			p.Addf("%s must be positive, got %d", name, positive[name])
		}
	}
	if c.HugeNamespaces > 0 && c.Objects > 0 && c.HugeNamespaces > c.Objects {
		p.Addf("huge-namespaces (%d) exceeds objects (%d)", c.HugeNamespaces, c.Objects)
	}
	if c.WriteRate <= 0 {
		p.Addf("write-rate must be positive, got %g", c.WriteRate)
	}
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"idle", c.Idle}, {"warmup", c.Warmup}, {"baseline", c.Baseline}, {"contended", c.Contended},
		{"alone", c.Alone}, {"watchlist-timeout", c.WatchListTimeout}, {"ready-timeout", c.ReadyTimeout},
	}
	for _, d := range durations {
		if d.d <= 0 {
			p.Addf("%s must be a positive duration, got %v", d.name, d.d)
		}
	}
	if c.BinDir == "" {
		p.Addf("bin-dir: the directory with local-up and kube-apiserver is needed")
	}
	return p.Err()
}

// localUpArgs are a configuration's kube-apiserver flags (local-up passes
// flags it does not know to kube-apiserver); nil for an unknown name.
func localUpArgs(config string) []string {
	switch config {
	case clusterbench.Upstream:
		return []string{"--watch-cache-implementation=upstream"}
	case clusterbench.Freshcache:
		return []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=false"}
	case clusterbench.FreshRV0:
		return []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true"}
	}
	return nil
}
