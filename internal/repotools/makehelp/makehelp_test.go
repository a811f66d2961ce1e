package makehelp

import (
	"slices"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		makefile string
		want     []string // Problem.String() of each, in order
	}{
		{
			name: "every phony target listed",
			makefile: ".PHONY: help build\n" +
				"help: ## Show this help.\n" +
				"\t@grep -E '^x' Makefile\n" +
				"build: gen ## Build (~1 min).\n",
		},
		{
			name: "digits and underscores in a name",
			makefile: ".PHONY: demo-59848 demo-59848-short run_2\n" +
				"demo-59848: build ## The demo (~30 min).\n" +
				"demo-59848-short: build ## The short demo (~4 min).\n" +
				"run_2: ## Run twice.\n",
		},
		{
			name: "phony target without help text",
			makefile: ".PHONY: build fmt\n" +
				"build: ## Build.\n" +
				"fmt:\n" +
				"\tgofmt -l .\n",
			want: []string{`Makefile:1: fmt: declared .PHONY, but make help does not list it: end its rule line with "## <what it does> (~<how long>)"`},
		},
		{
			name:     "phony target with no rule at all",
			makefile: ".PHONY: gone\n",
			want:     []string{`Makefile:1: gone: declared .PHONY, but make help does not list it: end its rule line with "## <what it does> (~<how long>)"`},
		},
		{
			name: "continued and repeated .PHONY lines",
			makefile: ".PHONY: a \\\n" +
				"\tb\n" +
				"a: ## A.\n" +
				".PHONY: c b\n" +
				"c: ## C.\n",
			want: []string{`Makefile:1: b: declared .PHONY, but make help does not list it: end its rule line with "## <what it does> (~<how long>)"`},
		},
		{
			name: "empty help text",
			makefile: ".PHONY: a\n" +
				"a: ##   \n",
			want: []string{`Makefile:2: a: empty help text after "## "`},
		},
		{
			name: "help text at most MaxHelp characters, runes counted",
			makefile: ".PHONY: a b\n" +
				"a: ## " + strings.Repeat("é", MaxHelp) + "\n" +
				"b: ## " + strings.Repeat("x", MaxHelp+1) + "\n",
			want: []string{"Makefile:3: b: help text of 101 characters, more than 100: keep the line short and say the rest in a comment above the rule"},
		},
		{
			name: "listed but not phony",
			makefile: ".PHONY: a\n" +
				"a: ## A.\n" +
				"b: ## B.\n",
			want: []string{"Makefile:3: b: make help lists it, but it is not declared .PHONY"},
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
				`Makefile:1: a: declared .PHONY, but make help does not list it: end its rule line with "## <what it does> (~<how long>)"`,
				`Makefile:1: b: declared .PHONY, but make help does not list it: end its rule line with "## <what it does> (~<how long>)"`,
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
	got := Help("help: ## Show this help.\n" +
		"test: verify lib ## Every default test; see kubernetes#59848 (~38 min).\n" +
		"X := 1\n")
	want := []Listed{
		{Target{"help", 1}, "Show this help."},
		{Target{"test", 2}, "Every default test; see kubernetes#59848 (~38 min)."},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Help:\ngot  %v\nwant %v", got, want)
	}
}

func TestPhony(t *testing.T) {
	got := Phony(".PHONY: a b \\\n  c\nx: y\n.PHONY : d a\n")
	want := []Target{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 4}}
	if !slices.Equal(got, want) {
		t.Errorf("Phony:\ngot  %v\nwant %v", got, want)
	}
}
