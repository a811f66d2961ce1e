package watchlist

import (
	"errors"
	"strings"
	"testing"
	"time"

	clusterbench "github.com/freshcache/freshcache/tools/bench/cluster"
)

func TestZeroConfigMeansDefaults(t *testing.T) {
	got := Config{BinDir: "bin"}.withDefaults()
	want := DefaultConfig()
	if got.Objects != want.Objects || got.WatchLists != want.WatchLists || got.Contended != want.Contended ||
		len(got.Configs) != len(clusterbench.AllConfigs) || got.WriteRate != want.WriteRate || got.Progress == nil {
		t.Fatalf("withDefaults of the zero config = %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	short := ShortConfig()
	short.BinDir = "bin"
	if err := short.Validate(); err != nil {
		t.Fatalf("short config does not validate: %v", err)
	}
	if short.Objects >= want.Objects || short.Contended >= want.Contended {
		t.Fatalf("short config is not shorter: %+v", short)
	}
}

func TestValidate(t *testing.T) {
	valid := DefaultConfig()
	valid.BinDir = "bin"
	for name, tc := range map[string]struct {
		edit func(*Config)
		want []string // substrings of the error; none means valid
	}{
		"defaults":            {func(*Config) {}, nil},
		"one configuration":   {func(c *Config) { c.Configs = []string{clusterbench.FreshRV0} }, nil},
		"no configuration":    {func(c *Config) { c.Configs = nil }, []string{"configs: at least one"}},
		"unknown":             {func(c *Config) { c.Configs = []string{"etcd"} }, []string{`unknown configuration "etcd"`}},
		"twice":               {func(c *Config) { c.Configs = []string{"upstream", "upstream"} }, []string{`"upstream" given twice`}},
		"zero objects":        {func(c *Config) { c.Objects = 0 }, []string{"objects must be positive, got 0"}},
		"negative watchlists": {func(c *Config) { c.WatchLists = -1 }, []string{"watchlists must be positive, got -1"}},
		"zero write rate":     {func(c *Config) { c.WriteRate = 0 }, []string{"write-rate must be positive"}},
		"zero phase":          {func(c *Config) { c.Contended = 0 }, []string{"contended must be a positive duration"}},
		"negative timeout":    {func(c *Config) { c.WatchListTimeout = -time.Second }, []string{"watchlist-timeout must be a positive duration"}},
		"more namespaces":     {func(c *Config) { c.Objects, c.HugeNamespaces = 5, 10 }, []string{"huge-namespaces (10) exceeds objects (5)"}},
		"no bin dir":          {func(c *Config) { c.BinDir = "" }, []string{"bin-dir"}},
		"every error at once": {func(c *Config) { c.ReadClients, c.Alone = 0, 0 }, []string{"read-clients", "alone"}},
	} {
		c := valid
		tc.edit(&c)
		err := c.Validate()
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: unexpected error %v", name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", name, tc.want)
			continue
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v does not wrap ErrConfig", name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", name, err, w)
			}
		}
	}
}

func TestLocalUpArgs(t *testing.T) {
	for _, name := range clusterbench.AllConfigs {
		args := localUpArgs(name)
		if len(args) == 0 || !strings.HasPrefix(args[0], "--watch-cache-implementation=") {
			t.Errorf("%s: args %v", name, args)
		}
	}
	if got := strings.Join(localUpArgs(clusterbench.FreshRV0), " "); !strings.Contains(got, "FreshResourceVersionZero=true") {
		t.Errorf("fresh-rv0 does not enable the gate: %s", got)
	}
	if localUpArgs("nope") != nil {
		t.Error("an unknown configuration has args")
	}
}

func TestHugeCount(t *testing.T) {
	total := 0
	for n := range 7 {
		total += hugeCount(100, 7, n)
	}
	if total != 100 || hugeCount(100, 7, 0) != 15 || hugeCount(100, 7, 6) != 14 {
		t.Fatalf("hugeCount spreads 100 over 7 as total %d, first %d, last %d", total, hugeCount(100, 7, 0), hugeCount(100, 7, 6))
	}
}
