package upstreame2e

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseSelection(t *testing.T) {
	cases := []struct {
		name, in string
		run      []string
		skipped  map[string]string
		wantErr  string
	}{
		{name: "names, skips, comments", in: "# c\n\n[sig-a] x works\nskip: [sig-a] y works ## needs a container\n  [sig-b] z  \n",
			run: []string{"[sig-a] x works", "[sig-b] z"}, skipped: map[string]string{"[sig-a] y works": "needs a container"}},
		{name: "skip without reason", in: "skip: [sig-a] y\n", wantErr: "needs a reason"},
		{name: "skip with empty reason", in: "skip: [sig-a] y ## \n", wantErr: "needs a reason"},
		{name: "listed twice", in: "[sig-a] x\nskip: [sig-a] x ## r\n", wantErr: "listed already on line 1"},
		{name: "node test listed twice", in: "node: [sig-a] x\n[sig-a] x\n", wantErr: "listed already on line 1"},
		{name: "node tests are not in Run", in: "[sig-a] x\nnode: [sig-a] y\n", run: []string{"[sig-a] x"}},
		{name: "hollow without reason", in: "hollow: [sig-a] y\n", wantErr: "needs the reason"},
		{name: "hollow listed twice", in: "hollow: [sig-a] y ## r\nnode: [sig-a] y\n", wantErr: "listed already on line 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSelection(strings.NewReader(c.in))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(s.Run, "|") != strings.Join(c.run, "|") {
				t.Errorf("Run = %q, want %q", s.Run, c.run)
			}
			if len(s.Skipped) != len(c.skipped) {
				t.Errorf("Skipped = %v, want %v", s.Skipped, c.skipped)
			}
			for k, v := range c.skipped {
				if s.Skipped[k] != v {
					t.Errorf("Skipped[%q] = %q, want %q", k, s.Skipped[k], v)
				}
			}
		})
	}
}

// A real node's cluster runs the node tests after the others; hollow
// nodes leave them out with a reason.
func TestForCluster(t *testing.T) {
	s, err := ParseSelection(strings.NewReader("[sig-a] x\nnode: [sig-a] y\nskip: [sig-a] z ## r\nhollow: [sig-a] w ## no image\n"))
	if err != nil {
		t.Fatal(err)
	}
	real := s.ForCluster(true)
	if got := strings.Join(real.Run, "|"); got != "[sig-a] x|[sig-a] y" {
		t.Errorf("real node: Run = %q", got)
	}
	if len(real.Skipped) != 2 || real.Skipped["[sig-a] z"] != "r" || real.Skipped["[sig-a] w"] != "no image" {
		t.Errorf("real node: Skipped = %v", real.Skipped)
	}
	hollow := s.ForCluster(false)
	if got := strings.Join(hollow.Run, "|"); got != "[sig-a] x|[sig-a] w" {
		t.Errorf("hollow: Run = %q", got)
	}
	if hollow.Skipped["[sig-a] y"] != hollowReason || len(hollow.Skipped) != 2 {
		t.Errorf("hollow: Skipped = %v", hollow.Skipped)
	}
	if len(s.Run) != 1 {
		t.Errorf("ForCluster changed its receiver: Run = %q", s.Run)
	}
}

// The focus picks exactly the listed names, though they hold regexp
// syntax and one is part of another.
func TestFocusMatchesExactlyTheSelection(t *testing.T) {
	s := &Selection{Run: []string{
		"[sig-a] Watchers should work [Conformance]",
		"[sig-a] (a.b) should *match* literally",
	}}
	rx := regexp.MustCompile(s.Focus())
	for _, c := range []struct {
		text string
		want bool
	}{
		{"[sig-a] Watchers should work [Conformance]", true},
		{"[sig-a] (a.b) should *match* literally", true},
		{"[sig-a] Watchers should work [Conformance] and more", false},
		{"[sig-a] Watchers should work Conformance", false},
		{"[sig-a] (aXb) should *match* literally", false},
	} {
		if got := rx.MatchString(c.text); got != c.want {
			t.Errorf("focus matches %q = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestCheckNamesMissingTests(t *testing.T) {
	s := &Selection{Run: []string{"a", "b"}, Skipped: map[string]string{"c": "r", "d": "r"}}
	if err := s.Check([]string{"a", "b", "c", "d", "e"}); err != nil {
		t.Fatal(err)
	}
	err := s.Check([]string{"a", "c"})
	if err == nil || !strings.Contains(err.Error(), "2 listed tests") || !strings.Contains(err.Error(), "skip: d") || !strings.Contains(err.Error(), "\n  b") {
		t.Fatalf("err = %v", err)
	}
	// A name that ends another's would select both.
	err = (&Selection{Run: []string{"a works"}}).Check([]string{"a works", "[sig-x] a works"})
	if err == nil || !strings.Contains(err.Error(), "also selects [sig-x] a works") {
		t.Fatalf("err = %v", err)
	}
}

// The committed selection parses and holds at least 100 tests.
func TestSelectionFile(t *testing.T) {
	s, err := ReadSelection(ListFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Run) < 100 {
		t.Errorf("tests.txt selects %d tests, want at least 100", len(s.Run))
	}
	for _, n := range s.Run {
		if strings.Contains(n, reasonSep) {
			t.Errorf("%q: a test name holds %q; a skip line lost its prefix?", n, reasonSep)
		}
	}
	for _, want := range []string{"[sig-api-machinery] Watchers", "[sig-api-machinery] Servers with support for API chunking", "[sig-api-machinery] API Streaming (aka. WatchList)", "[sig-api-machinery] Garbage collector", "[sig-api-machinery] ResourceQuota"} {
		found := false
		for _, n := range s.Run {
			found = found || strings.HasPrefix(n, want)
		}
		if !found {
			t.Errorf("tests.txt runs no test of %q", want)
		}
	}
}
