package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/kepshape"
	"github.com/freshcache/freshcache/tools/bench/stall"
	"github.com/freshcache/freshcache/tools/bench/watchlist"
)

// parseCase is a command line and what a subcommand's parse function
// must make of it: a config and the command's own settings, or an error
// saying wantErr.
type parseCase[C, A any] struct {
	args     []string
	want     C
	wantArgs A
	wantErr  string
}

func testParse[C, A any](t *testing.T, parse func([]string) (C, A, error), cases map[string]parseCase[C, A]) {
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, a, err := parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parse(%q) = %v, want an error saying %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg, tc.want) {
				t.Errorf("config\n %+v\nwant\n %+v", cfg, tc.want)
			}
			if !reflect.DeepEqual(a, tc.wantArgs) {
				t.Errorf("args %+v, want %+v", a, tc.wantArgs)
			}
		})
	}
}

// TestParseStall: --short takes the smoke run's values except for the
// flags given on the command line; without it, every flag not given keeps
// the full scenario's.
func TestParseStall(t *testing.T) {
	with := func(c stall.Config, edit func(*stall.Config)) stall.Config {
		edit(&c)
		return c
	}
	def, short := stall.DefaultConfig(), stall.ShortConfig()
	results := stallArgs{outDir: "docs/results", name: "stall"}
	testParse(t, parseStall, map[string]parseCase[stall.Config, stallArgs]{
		"defaults": {args: nil, want: def, wantArgs: results},
		"short":    {args: []string{"--short"}, want: short, wantArgs: results},
		"short keeps explicit flags": {
			args:     []string{"--stall=45s", "--short", "--clients=3", "--note=a", "--note=b"},
			want:     with(short, func(c *stall.Config) { c.Stall, c.Clients = 45*time.Second, 3 }),
			wantArgs: stallArgs{outDir: "docs/results", name: "stall", notes: []string{"a", "b"}},
		},
		"flags without short": {
			args: []string{"--stall=45s", "--configs=freshcache,upstream", "--out-dir=", "--name=x"},
			want: with(def, func(c *stall.Config) {
				c.Stall, c.Configurations = 45*time.Second, []string{stall.Freshcache, stall.Upstream}
			}),
			wantArgs: stallArgs{name: "x"},
		},
		"unexpected argument": {args: []string{"--short", "extra"}, wantErr: `stall: unexpected arguments ["extra"]`},
		"unknown flag":        {args: []string{"--nope"}, wantErr: "unknown flag: --nope"},
	})
}

// TestParseWatchList: the same for the watchlist subcommand, whose
// --bin-dir defaults to make build's directory.
func TestParseWatchList(t *testing.T) {
	with := func(c watchlist.Config, edit func(*watchlist.Config)) watchlist.Config {
		c.BinDir = "_output/bin"
		edit(&c)
		return c
	}
	def, short := watchlist.DefaultConfig(), watchlist.ShortConfig()
	same := func(*watchlist.Config) {}
	out := "docs/results/watchlist.md"
	testParse(t, parseWatchList, map[string]parseCase[watchlist.Config, watchListArgs]{
		"defaults": {args: nil, want: with(def, same), wantArgs: watchListArgs{out: out}},
		"short":    {args: []string{"--short"}, want: with(short, same), wantArgs: watchListArgs{out: out, short: true}},
		"short keeps explicit flags": {
			args: []string{"--short", "--objects=500", "--contended=1m", "--local-up-arg=--x", "-v"},
			want: with(short, func(c *watchlist.Config) {
				c.Objects, c.Contended, c.LocalUpArgs = 500, time.Minute, []string{"--x"}
			}),
			wantArgs: watchListArgs{out: out, short: true, verbose: true},
		},
		"flags without short": {
			args:     []string{"--objects=500", "--from-json=r.json", "--note=n"},
			want:     with(def, func(c *watchlist.Config) { c.Objects = 500 }),
			wantArgs: watchListArgs{out: out, from: "r.json", notes: []string{"n"}},
		},
		"unexpected argument": {args: []string{"extra"}, wantErr: `watchlist: unexpected arguments ["extra"]`},
	})
}

// TestParseKEP2340: the same for the kep-2340 subcommand, whose --short
// changes only the objects, the warm-up and the window.
func TestParseKEP2340(t *testing.T) {
	with := func(c kepshape.Config, edit func(*kepshape.Config)) kepshape.Config {
		c.BinDir = "_output/bin"
		edit(&c)
		return c
	}
	def, short := kepshape.DefaultConfig(), kepshape.ShortConfig()
	same := func(*kepshape.Config) {}
	out := "docs/results/kep-2340.md"
	testParse(t, parseKEP2340, map[string]parseCase[kepshape.Config, kepArgs]{
		"defaults": {args: nil, want: with(def, same), wantArgs: kepArgs{out: out}},
		"short":    {args: []string{"--short"}, want: with(short, same), wantArgs: kepArgs{out: out}},
		"short keeps explicit flags": {
			args:     []string{"--short", "--objects=500", "--window=1m", "--keep-data", "--note=n"},
			want:     with(short, func(c *kepshape.Config) { c.Objects, c.Window = 500, time.Minute }),
			wantArgs: kepArgs{out: out, keep: true, notes: []string{"n"}},
		},
		"flags without short": {
			args:     []string{"--objects=500", "--data-dir=d", "--out=x.md"},
			want:     with(def, func(c *kepshape.Config) { c.Objects = 500 }),
			wantArgs: kepArgs{out: "x.md", dataDir: "d"},
		},
	})
}

func TestWriteDiagHeading(t *testing.T) {
	var b strings.Builder
	if err := writeDiagHeading(&b, "netpoll-floor", "commit: `abc`", "command: `x y`"); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if !strings.HasPrefix(got, "# freshcache-bench netpoll-floor: ") || !strings.HasSuffix(got, " UTC\n\n- commit: `abc`\n- command: `x y`\n\n") {
		t.Errorf("heading %q", got)
	}
}

func TestWriteScenarioReport(t *testing.T) {
	errWrite := errors.New("disk full")
	markdown := func(w io.Writer, res string) error { _, err := io.WriteString(w, res); return err }
	json := func(path, _ string) error { return os.WriteFile(path, []byte("{}\n"), 0o644) }
	for name, tc := range map[string]struct {
		markdown  func(io.Writer, string) error
		writeJSON func(string, string) error
		wantErr   error
		wantMD    string // checked when not ""
		wantJSON  string
	}{
		"both written":         {markdown, json, nil, "# report\n", "{}\n"},
		"markdown fails first": {func(io.Writer, string) error { return errWrite }, json, errWrite, "", ""},
		"json fails":           {markdown, func(string, string) error { return errWrite }, errWrite, "# report\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			md, js := filepath.Join(dir, "r.md"), filepath.Join(dir, "r.json")
			if err := writeScenarioReport(md, js, "# report\n", tc.markdown, tc.writeJSON); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("writeScenarioReport = %v, want %v", err, tc.wantErr)
			}
			if b, _ := os.ReadFile(md); tc.wantMD != "" && string(b) != tc.wantMD {
				t.Errorf("markdown %q, want %q", b, tc.wantMD)
			}
			if b, err := os.ReadFile(js); (tc.wantJSON == "") != (err != nil) || string(b) != tc.wantJSON {
				t.Errorf("JSON %q (%v), want %q", b, err, tc.wantJSON)
			}
		})
	}
}
