package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/tools/bench/stall"
)

// TestStallShortKeepsExplicitFlags: --short takes the smoke run's values
// except for the flags given on the command line.
func TestStallShortKeepsExplicitFlags(t *testing.T) {
	fs := pflag.NewFlagSet("stall", pflag.ContinueOnError)
	cfg := stall.DefaultConfig()
	fs.IntVar(&cfg.Objects, "objects", cfg.Objects, "")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "")
	fs.DurationVar(&cfg.Steady, "steady", cfg.Steady, "")
	fs.DurationVar(&cfg.Stall, "stall", cfg.Stall, "")
	fs.DurationVar(&cfg.After, "after", cfg.After, "")
	if err := fs.Parse([]string{"--stall=45s", "--clients=3"}); err != nil {
		t.Fatal(err)
	}
	got := applyStallShort(fs, cfg)
	short := stall.ShortConfig()
	if got.Stall != 45*time.Second || got.Clients != 3 {
		t.Errorf("explicit flags lost: stall %v, clients %d", got.Stall, got.Clients)
	}
	if got.Objects != short.Objects || got.Steady != short.Steady || got.After != short.After || got.Warmup != short.Warmup {
		t.Errorf("short values not taken: %+v", got)
	}
}
