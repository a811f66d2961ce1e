package stall

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/freshcache/freshcache/tools/bench/configcheck"
)

// The configurations a run can compare, in report order.
const (
	// Upstream is upstream's cacher with its default: a consistent LIST
	// that waited 3 s for the cache is sent to etcd.
	Upstream = "upstream"
	// UpstreamSkipFallback is upstream with its 1.37 alpha gate
	// ConsistentListFromCacheSkipTimeoutFallback: 429 instead of etcd.
	UpstreamSkipFallback = "upstream-skip-fallback"
	// Freshcache is freshcache's default: fallback to etcd within the
	// fallback budget, 429 beyond it.
	Freshcache = "freshcache"
	// FreshcacheReject is --consistent-read-timeout-action=reject: 429
	// after the timeout, never etcd.
	FreshcacheReject = "freshcache-reject"
	// FreshcacheUnbounded is --consistent-read-fallback-budget=-1: every
	// timed-out read goes to etcd, as upstream's do.
	FreshcacheUnbounded = "freshcache-unbounded"
)

// configurationArgs are the kube-apiserver flags (through local-up) of
// each configuration.
var configurationArgs = map[string][]string{
	Upstream:             {"--watch-cache-implementation=upstream"},
	UpstreamSkipFallback: {"--watch-cache-implementation=upstream", "--feature-gates=ConsistentListFromCacheSkipTimeoutFallback=true"},
	Freshcache:           {"--watch-cache-implementation=freshcache"},
	FreshcacheReject:     {"--watch-cache-implementation=freshcache", "--consistent-read-timeout-action=reject"},
	FreshcacheUnbounded:  {"--watch-cache-implementation=freshcache", "--consistent-read-fallback-budget=-1"},
}

// AllConfigurations lists every configuration, in report order.
var AllConfigurations = []string{Upstream, UpstreamSkipFallback, Freshcache, FreshcacheReject, FreshcacheUnbounded}

// Args returns the kube-apiserver flags of a configuration, nil for an
// unknown name.
func Args(configuration string) []string {
	return append([]string(nil), configurationArgs[configuration]...)
}

// Namespace holds the listed configmaps.
const Namespace = "stall"

// Config is one run. DefaultConfig gives the full scenario, ShortConfig a
// smoke run; Validate says what is wrong with one.
type Config struct {
	// BinDir holds local-up and kube-apiserver (make build).
	BinDir string `json:"-"`
	// EtcdCommand starts the etcd under test: a program and its
	// arguments, to which the run appends --data-dir=DIR. The program
	// prints etcd's client URL as the first line of its standard output
	// and serves until SIGINT (`freshcache-bench etcd` does).
	EtcdCommand []string `json:"-"`
	// Configurations run one after another, each on a fresh cluster.
	Configurations []string `json:"configurations"`

	// Objects configmaps of ObjectBytes of data each, in Namespace.
	Objects     int `json:"objects"`
	ObjectBytes int `json:"object_bytes"`
	// Clients list the namespace with rv="" in a loop.
	Clients int `json:"clients"`
	// WritesPerSec update random configmaps straight to etcd.
	WritesPerSec float64 `json:"writes_per_sec"`
	// StallWrites more updates are sent at once right after the SIGSTOP:
	// they queue at the stopped etcd and land together when it resumes,
	// so that the cache has a backlog of events to catch up with. 0: none.
	StallWrites int `json:"stall_writes"`

	// Warmup is load before the steady window; Steady is the pre-stall
	// window; Stall how long etcd is stopped; After the observation
	// after it resumes.
	Warmup time.Duration `json:"warmup"`
	Steady time.Duration `json:"steady"`
	Stall  time.Duration `json:"stall"`
	After  time.Duration `json:"after"`
	// SampleEvery is the RSS sampling interval.
	SampleEvery time.Duration `json:"sample_every"`
	// ReadTimeout bounds one read on the client side; a read cut by it
	// counts as "other".
	ReadTimeout time.Duration `json:"read_timeout"`
	// MaxRetryAfter caps the pause a 429's Retry-After asks for.
	MaxRetryAfter time.Duration `json:"max_retry_after"`

	// DataDir holds each configuration's etcd and local-up data; a
	// temporary directory when empty.
	DataDir string `json:"-"`
	// Progress receives one line per step; nil discards them.
	Progress io.Writer `json:"-"`
}

// DefaultConfig is the full scenario: 5,000 configmaps of 10 KiB (a
// ~50 MB LIST), 20 clients, 5 writes/s, 30 s warm-up, 30 s steady, a 10 s
// stall and 45 s after it. The warm-up is long because the apiserver's RSS
// still climbs for 20-30 s after the load starts (the Go heap finding its
// size under 20 LISTs in flight); a shorter one puts that climb into the
// pre-stall level.
func DefaultConfig() Config {
	return Config{
		BinDir:         "_output/bin",
		Configurations: append([]string(nil), AllConfigurations...),
		Objects:        5000,
		ObjectBytes:    10 << 10,
		Clients:        20,
		WritesPerSec:   5,
		Warmup:         30 * time.Second,
		Steady:         30 * time.Second,
		Stall:          10 * time.Second,
		After:          45 * time.Second,
		SampleEvery:    200 * time.Millisecond,
		ReadTimeout:    90 * time.Second,
		MaxRetryAfter:  5 * time.Second,
	}
}

// ShortConfig is a smoke run of the same timeline, about a minute per
// configuration: 1,000 configmaps, 8 clients, a 5 s stall.
func ShortConfig() Config {
	c := DefaultConfig()
	c.Objects = 1000
	c.Clients = 8
	c.Warmup = 3 * time.Second
	c.Steady = 10 * time.Second
	c.Stall = 5 * time.Second
	c.After = 15 * time.Second
	return c
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("stall: bad configuration")

// Validate reports every problem, each naming the flag it comes from.
func (c Config) Validate() error {
	p := configcheck.New(ErrConfig)
	if c.BinDir == "" {
		p.Addf("--bin-dir is empty (it must hold local-up and kube-apiserver; make build)")
	}
	if len(c.EtcdCommand) == 0 {
		p.Addf("no etcd command")
	}
	known := strings.Join(AllConfigurations, ",")
	p.Names(c.Configurations, configcheck.NameRule{
		Known:   AllConfigurations,
		Empty:   "--configs is empty; choose among " + known,
		Unknown: "--configs: unknown configuration %q; choose among " + known,
		Twice:   "--configs: %q is listed twice",
	})
	if c.Objects < 1 {
		p.Addf("--objects=%d: at least 1", c.Objects)
	}
	// etcd refuses a request over 1.5 MiB (its --max-request-bytes).
	if c.ObjectBytes < 0 || c.ObjectBytes > 1<<20 {
		p.Addf("--object-bytes=%d: between 0 and 1 MiB (etcd's request limit is 1.5 MiB)", c.ObjectBytes)
	}
	if c.Clients < 1 || c.Clients > 1000 {
		p.Addf("--clients=%d: between 1 and 1000", c.Clients)
	}
	if c.StallWrites < 0 || c.StallWrites > 100000 {
		p.Addf("--stall-writes=%d: between 0 and 100000", c.StallWrites)
	}
	if c.WritesPerSec < 0 {
		p.Addf("--writes-per-sec=%g: must not be negative", c.WritesPerSec)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
		zero bool // zero allowed
	}{
		{"--warmup", c.Warmup, true},
		{"--steady", c.Steady, false},
		{"--stall", c.Stall, false},
		{"--after", c.After, false},
		{"--sample-every", c.SampleEvery, false},
		{"--read-timeout", c.ReadTimeout, false},
		{"--max-retry-after", c.MaxRetryAfter, false},
	} {
		if d.v < 0 || (d.v == 0 && !d.zero) {
			p.Addf("%s=%v: must be positive", d.flag, d.v)
		}
	}
	if c.SampleEvery > 0 && c.Steady > 0 && c.SampleEvery > c.Steady/5 {
		p.Addf("--sample-every=%v: at most a fifth of --steady=%v, so that the pre-stall median has samples", c.SampleEvery, c.Steady)
	}
	return p.Err()
}

func (c Config) progress() io.Writer {
	if c.Progress == nil {
		return io.Discard
	}
	return c.Progress
}

// MarshalJSON shows durations as Go duration strings ("10s").
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(struct {
		plain
		Warmup        string `json:"warmup"`
		Steady        string `json:"steady"`
		Stall         string `json:"stall"`
		After         string `json:"after"`
		SampleEvery   string `json:"sample_every"`
		ReadTimeout   string `json:"read_timeout"`
		MaxRetryAfter string `json:"max_retry_after"`
	}{plain(c), c.Warmup.String(), c.Steady.String(), c.Stall.String(), c.After.String(),
		c.SampleEvery.String(), c.ReadTimeout.String(), c.MaxRetryAfter.String()})
}
