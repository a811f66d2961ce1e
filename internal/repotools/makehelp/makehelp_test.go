package makehelp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// unlisted is Check's problem for a .PHONY target neither recipe lists.
const unlisted = `declared .PHONY, but no help recipe lists it: end its rule line with "## <what it does> (~<how long>)" for make help (everyday targets) or "### ..." for make help-all`

// everyday returns a Makefile of n everyday targets t1..tn, each .PHONY.
func everyday(n int) string {
	var names, rules []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("t%d", i))
		rules = append(rules, fmt.Sprintf("t%d: ## T.\n", i))
	}
	return ".PHONY: " + strings.Join(names, " ") + "\n" + strings.Join(rules, "")
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		makefile string
		want     []string // Problem.String() of each, in order
	}{
		{
			name: "every phony target listed",
			makefile: ".PHONY: help help-all build\n" +
				"help: ### Show this help.\n" +
				"\t@awk '/x/' Makefile\n" +
				"help-all: ### Show the rest.\n" +
				"build: gen ## Build (~1 min).\n",
		},
		{
			name: "digits and underscores in a name",
			makefile: ".PHONY: demo-59848 demo-59848-short run_2\n" +
				"demo-59848: build ## The demo (~30 min).\n" +
				"demo-59848-short: build ### The short demo (~4 min).\n" +
				"run_2: ## Run twice.\n",
		},
		{
			name: "phony target without help text",
			makefile: ".PHONY: build fmt\n" +
				"build: ## Build.\n" +
				"fmt:\n" +
				"\tgofmt -l .\n",
			want: []string{"Makefile:1: fmt: " + unlisted},
		},
		{
			name:     "phony target with no rule at all",
			makefile: ".PHONY: gone\n",
			want:     []string{"Makefile:1: gone: " + unlisted},
		},
		{
			name: "continued and repeated .PHONY lines",
			makefile: ".PHONY: a \\\n" +
				"\tb\n" +
				"a: ## A.\n" +
				".PHONY: c b\n" +
				"c: ### C.\n",
			want: []string{"Makefile:1: b: " + unlisted},
		},
		{
			name: "empty help text",
			makefile: ".PHONY: a b\n" +
				"a: ##   \n" +
				"b: ###  \n",
			want: []string{
				"Makefile:2: a: empty help text after its mark",
				"Makefile:3: b: empty help text after its mark",
			},
		},
		{
			name: "four marks are no mark",
			makefile: ".PHONY: a\n" +
				"a: #### A.\n",
			want: []string{"Makefile:1: a: " + unlisted},
		},
		{
			name: "lines at most MaxLine characters, runes counted, each list padded to its longest name",
			makefile: ".PHONY: a bb c dddd\n" +
				// make help pads to "bb": 2+2+2 = 6 characters before the text.
				"a: ## " + strings.Repeat("é", MaxLine-6) + "\n" +
				"bb: ## " + strings.Repeat("x", MaxLine-5) + "\n" +
				// make help-all pads to "dddd": 8 characters before the text.
				"c: ### " + strings.Repeat("x", MaxLine-8) + "\n" +
				"dddd: ### " + strings.Repeat("x", MaxLine-7) + "\n",
			want: []string{
				"Makefile:3: bb: make help prints a line of 100 characters, more than 99: keep the text short and say the rest in a comment above the rule",
				"Makefile:5: dddd: make help-all prints a line of 100 characters, more than 99: keep the text short and say the rest in a comment above the rule",
			},
		},
		{
			name:     "MaxEveryday targets in make help",
			makefile: everyday(MaxEveryday),
		},
		{
			name:     "one more than MaxEveryday",
			makefile: everyday(MaxEveryday + 2),
			want:     []string{`Makefile:17: t16: make help lists more than 15 targets from here on: mark the least everyday rules "### " for make help-all`},
		},
		{
			name:     "make help-all has no limit",
			makefile: strings.ReplaceAll(everyday(MaxEveryday+5), "##", "###"),
		},
		{
			name: "listed twice",
			makefile: ".PHONY: a b\n" +
				"a: ## A.\n" +
				"b: ### B.\n" +
				"a: ### A again.\n" +
				"b: ### B again.\n",
			want: []string{
				"Makefile:4: a: listed a second time (first at Makefile:2, by make help): give each target one rule line with a help text",
				"Makefile:5: b: listed a second time (first at Makefile:3, by make help-all): give each target one rule line with a help text",
			},
		},
		{
			name: "listed but not phony",
			makefile: ".PHONY: a\n" +
				"a: ## A.\n" +
				"b: ## B.\n" +
				"c: ### C.\n",
			want: []string{
				"Makefile:3: b: make help lists it, but it is not declared .PHONY",
				"Makefile:4: c: make help-all lists it, but it is not declared .PHONY",
			},
		},
		{
			name: "rules make help does not list",
			makefile: ".PHONY: a\n" +
				"a: ## A.\n" +
				"$(BENCH): FORCE\n" +
				"FORCE:\n" +
				"\techo 'x: ## not a rule'\n" +
				"# c: ## a comment\n",
		},
		{
			name: "a target in a multi-target rule is not listed",
			makefile: ".PHONY: a b\n" +
				"a b: ## A and B.\n",
			want: []string{
				"Makefile:1: a: " + unlisted,
				"Makefile:1: b: " + unlisted,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Check(tc.makefile) {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check:\ngot  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	got := Help("help: ### Show this help.\n" +
		"test: verify lib ## Every default test; see kubernetes#59848 (~38 min).\n" +
		"X := 1\n")
	want := []Listed{
		{Target{"help", 1}, "Show this help.", true},
		{Target{"test", 2}, "Every default test; see kubernetes#59848 (~38 min).", false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Help:\ngot  %v\nwant %v", got, want)
	}
}

func TestLines(t *testing.T) {
	listed := Help("help: ### Show this help.\n" +
		"build: ## Build.\n" +
		"test: build ## Test.\n" +
		"bench-short: ### Bench, short.\n")
	for _, tc := range []struct {
		all  bool
		want []string
	}{
		{false, []string{"  build  Build.", "  test   Test."}},
		{true, []string{"  help         Show this help.", "  bench-short  Bench, short."}},
	} {
		if got := Lines(listed, tc.all); !slices.Equal(got, tc.want) {
			t.Errorf("Lines(all=%v):\ngot  %q\nwant %q", tc.all, got, tc.want)
		}
	}
}

func TestPhony(t *testing.T) {
	got := Phony(".PHONY: a b \\\n  c\nx: y\n.PHONY : d a\n")
	want := []Target{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 4}}
	if !slices.Equal(got, want) {
		t.Errorf("Phony:\ngot  %v\nwant %v", got, want)
	}
}
