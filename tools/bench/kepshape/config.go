package kepshape

import (
	"io"
	"slices"
	"strings"
	"time"

	clusterbench "github.com/freshcache/freshcache/tools/bench/cluster"
	"github.com/freshcache/freshcache/tools/bench/configcheck"
)

// ConfigEtcd is kube-apiserver without a watch cache (--watch-cache=false):
// every LIST is read from etcd, KEP-2340's baseline.
const ConfigEtcd = "etcd"

// AllConfigs in report order.
var AllConfigs = []string{clusterbench.Upstream, clusterbench.Freshcache, clusterbench.FreshRV0, ConfigEtcd}

// Config is one run.
type Config struct {
	// BinDir holds local-up and kube-apiserver (make build).
	BinDir string `json:"-"`
	// DataDir receives the local-up data directories.
	DataDir string   `json:"-"`
	Configs []string `json:"configs"`
	// Objects configmaps of ValueBytes each, over Namespaces namespaces,
	// written LoadWriters at a time.
	Objects     int `json:"objects"`
	Namespaces  int `json:"namespaces"`
	ValueBytes  int `json:"value_bytes"`
	LoadWriters int `json:"load_writers"`
	// ListRate is the LISTs per second, open loop.
	ListRate float64 `json:"list_rate"`
	// Warmup runs the LISTs unmeasured; Window is measured.
	Warmup time.Duration `json:"warmup"`
	Window time.Duration `json:"window"`
	// ListTimeout bounds one LIST (from etcd at 100,000 objects a LIST
	// takes seconds on 2 cores).
	ListTimeout time.Duration `json:"list_timeout"`
	// ReadyTimeout bounds local-up's start and the cache's catch-up.
	ReadyTimeout time.Duration `json:"ready_timeout"`
	// Progress receives one line per step; nil discards them.
	Progress io.Writer `json:"-"`
}

// DefaultConfig is the full shape: 100,000 configmaps of 1 KiB, 1 LIST/s,
// a 2-minute window.
func DefaultConfig() Config {
	return Config{
		Configs:      slices.Clone(AllConfigs),
		Objects:      100_000,
		Namespaces:   10,
		ValueBytes:   1024,
		LoadWriters:  64,
		ListRate:     1,
		Warmup:       15 * time.Second,
		Window:       2 * time.Minute,
		ListTimeout:  time.Minute,
		ReadyTimeout: 10 * time.Minute,
	}
}

// ShortConfig checks the harness in a few minutes: 10,000 objects, a
// 30-second window.
func ShortConfig() Config {
	c := DefaultConfig()
	c.Objects = 10_000
	c.Warmup = 5 * time.Second
	c.Window = 30 * time.Second
	return c
}

// Validate reports every problem, naming the flag.
func (c Config) Validate() error {
	p := configcheck.New(nil)
	p.Names(c.Configs, configcheck.NameRule{
		Known:   AllConfigs,
		Empty:   "--configs: at least one configuration is needed",
		Unknown: "--configs: unknown configuration %q (known: [" + strings.Join(AllConfigs, " ") + "])",
	})
	for _, check := range []struct {
		flag string
		v    float64
	}{
		{"--objects", float64(c.Objects)}, {"--namespaces", float64(c.Namespaces)}, {"--value-bytes", float64(c.ValueBytes)},
		{"--load-writers", float64(c.LoadWriters)}, {"--list-rate", c.ListRate}, {"--window", c.Window.Seconds()},
		{"--list-timeout", c.ListTimeout.Seconds()}, {"--ready-timeout", c.ReadyTimeout.Seconds()},
	} {
		if check.v <= 0 {
			p.Addf("%s: %v; must be more than 0", check.flag, check.v)
		}
	}
	if c.Warmup < 0 {
		p.Addf("--warmup: %v; must not be negative", c.Warmup)
	}
	if c.BinDir == "" {
		p.Addf("--bin-dir: the directory with local-up and kube-apiserver is needed")
	}
	return p.Err()
}

// localUpArgs are a configuration's local-up flags (those it does not know
// go to kube-apiserver); nil for an unknown name.
func localUpArgs(config string) []string {
	base := []string{"--nodes=0", "--controllers=false"}
	switch config {
	case clusterbench.Upstream:
		return append(base, "--watch-cache-implementation=upstream")
	case clusterbench.Freshcache:
		return append(base, "--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=false")
	case clusterbench.FreshRV0:
		return append(base, "--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true")
	case ConfigEtcd:
		return append(base, "--watch-cache=false")
	}
	return nil
}
