package stall

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	c := DefaultConfig()
	c.EtcdCommand = []string{"freshcache-bench", "etcd"}
	return c
}

func TestValidateDefaults(t *testing.T) {
	for name, c := range map[string]Config{"default": validConfig(), "short": func() Config {
		c := ShortConfig()
		c.EtcdCommand = []string{"etcd"}
		return c
	}()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no bin dir", func(c *Config) { c.BinDir = "" }, "--bin-dir"},
		{"no etcd", func(c *Config) { c.EtcdCommand = nil }, "etcd command"},
		{"no configurations", func(c *Config) { c.Configurations = nil }, "--configs is empty"},
		{"unknown configuration", func(c *Config) { c.Configurations = []string{"upstream", "fresh"} }, `unknown configuration "fresh"; choose among upstream,upstream-skip-fallback,freshcache,freshcache-reject,freshcache-unbounded`},
		{"duplicate", func(c *Config) { c.Configurations = []string{"freshcache", "freshcache"} }, `"freshcache" is listed twice`},
		{"no objects", func(c *Config) { c.Objects = 0 }, "--objects=0"},
		{"huge objects", func(c *Config) { c.ObjectBytes = 2 << 20 }, "--object-bytes=2097152"},
		{"no clients", func(c *Config) { c.Clients = 0 }, "--clients=0"},
		{"negative writes", func(c *Config) { c.WritesPerSec = -1 }, "--writes-per-sec=-1"},
		{"zero stall", func(c *Config) { c.Stall = 0 }, "--stall=0s: must be positive"},
		{"negative warm-up", func(c *Config) { c.Warmup = -time.Second }, "--warmup=-1s"},
		{"zero read timeout", func(c *Config) { c.ReadTimeout = 0 }, "--read-timeout=0s"},
		{"coarse sampling", func(c *Config) { c.SampleEvery = 10 * time.Second }, "--sample-every=10s: at most a fifth of --steady=30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("Validate() = %v, does not wrap ErrConfig", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := validConfig()
	c.Objects, c.Clients = 0, 0
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "--objects") || !strings.Contains(err.Error(), "--clients") {
		t.Fatalf("Validate() = %v, want both --objects and --clients", err)
	}
}

func TestZeroWarmupIsValid(t *testing.T) {
	c := validConfig()
	c.Warmup = 0
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestArgs(t *testing.T) {
	for _, name := range AllConfigurations {
		a := Args(name)
		if len(a) == 0 || !strings.HasPrefix(a[0], "--watch-cache-implementation=") {
			t.Errorf("Args(%s) = %v, want the implementation first", name, a)
		}
	}
	if Args("nope") != nil {
		t.Error("Args of an unknown configuration is not nil")
	}
	a := Args(Upstream)
	a[0] = "changed"
	if Args(Upstream)[0] == "changed" {
		t.Error("Args returns the table itself, not a copy")
	}
}

func TestConfigJSONShowsDurations(t *testing.T) {
	b, err := json.Marshal(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"stall":"10s"`, `"steady":"30s"`, `"sample_every":"200ms"`, `"objects":5000`, `"configurations":["upstream"`} {
		if !strings.Contains(s, want) {
			t.Errorf("config JSON %s lacks %s", s, want)
		}
	}
	if strings.Contains(s, "EtcdCommand") || strings.Contains(s, "freshcache-bench") {
		t.Errorf("config JSON %s shows the etcd command", s)
	}
}
