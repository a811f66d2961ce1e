package makehelp

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// HelpRule is the rule line the Makefile's help recipe lists (its grep
// and awk): a target made of letters, digits, '_' and '-', a colon, the
// prerequisites, then "## " and the help text. Keep the two in step; the
// repository test runs the recipe to catch a difference.
var HelpRule = regexp.MustCompile(`^([a-zA-Z0-9_-]+):.*?## (.*)$`)

// MaxHelp is the longest help text a rule may have, in characters, so that
// `make help` reads as a list: one line per target on a wide terminal.
const MaxHelp = 100

// phonyLine is a .PHONY declaration; its targets follow the colon.
var phonyLine = regexp.MustCompile(`^\.PHONY\s*:(.*)$`)

// Target is a target name and the line (1-based) of the Makefile that
// declares or lists it.
type Target struct {
	Name string
	Line int
}

// Listed is a target `make help` lists, and its help text.
type Listed struct {
	Target
	Text string
}

// Problem is one thing Check found wrong, at a line of the Makefile.
type Problem struct {
	Target
	What string
}

func (p Problem) String() string {
	return fmt.Sprintf("Makefile:%d: %s: %s", p.Line, p.Name, p.What)
}

// line is a logical line: backslash-continued lines joined, numbered by
// its first physical line.
type line struct {
	text string
	n    int
}

func logicalLines(text string) []line {
	var out []line
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(text, "\n") {
		if cur.Len() == 0 {
			start = i + 1
		}
		if head, ok := strings.CutSuffix(l, `\`); ok {
			cur.WriteString(head + " ")
			continue
		}
		cur.WriteString(l)
		out = append(out, line{cur.String(), start})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, line{cur.String(), start})
	}
	return out
}

// Phony returns the targets of every .PHONY line, in order, each once.
func Phony(makefile string) []Target {
	var out []Target
	seen := map[string]bool{}
	for _, l := range logicalLines(makefile) {
		m := phonyLine.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		for _, name := range strings.Fields(m[1]) {
			if !seen[name] {
				seen[name] = true
				out = append(out, Target{name, l.n})
			}
		}
	}
	return out
}

// Help returns the rules the help recipe lists, in the Makefile's order,
// with their help texts trimmed.
func Help(makefile string) []Listed {
	var out []Listed
	for i, l := range strings.Split(makefile, "\n") {
		if m := HelpRule.FindStringSubmatch(l); m != nil {
			out = append(out, Listed{Target{m[1], i + 1}, strings.TrimSpace(m[2])})
		}
	}
	return out
}

// Check returns every .PHONY target `make help` would leave out or list
// without a text, and every listed target that is not .PHONY, in the
// Makefile's order. A Makefile with none of these gets nil.
func Check(makefile string) []Problem {
	phony := map[string]bool{}
	for _, p := range Phony(makefile) {
		phony[p.Name] = true
	}
	listed := map[string]bool{}
	var problems []Problem
	for _, l := range Help(makefile) {
		listed[l.Name] = true
		if l.Text == "" {
			problems = append(problems, Problem{l.Target, `empty help text after "## "`})
		}
		if n := utf8.RuneCountInString(l.Text); n > MaxHelp {
			problems = append(problems, Problem{l.Target, fmt.Sprintf("help text of %d characters, more than %d: keep the line short and say the rest in a comment above the rule", n, MaxHelp)})
		}
		if !phony[l.Name] {
			problems = append(problems, Problem{l.Target, "make help lists it, but it is not declared .PHONY"})
		}
	}
	for _, p := range Phony(makefile) {
		if !listed[p.Name] {
			problems = append(problems, Problem{p, `declared .PHONY, but make help does not list it: end its rule line with "## <what it does> (~<how long>)"`})
		}
	}
	return problems
}
