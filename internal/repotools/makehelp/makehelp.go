package makehelp

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// HelpRule is a rule line the Makefile's help recipes list (HELP_LIST's
// awk): a target made of letters, digits, '_' and '-', a colon, the
// prerequisites (which hold no '#': make reads one as a comment), then the
// mark and the help text. The mark "## " puts the target in `make help`,
// "### " in `make help-all`. Keep the two in step; the repository test
// runs both recipes to catch a difference.
var HelpRule = regexp.MustCompile(`^([a-zA-Z0-9_-]+):[^#]*(###|##) (.*)$`)

// MaxLine is the longest line, in characters, `make help` or `make
// help-all` may print (under 100), so that each reads as a list: one line
// per target on a terminal of 100 columns.
const MaxLine = 99

// MaxEveryday is how many targets `make help` may list: the everyday ones,
// few enough to read at a glance; the rest go to `make help-all`.
const MaxEveryday = 15

// phonyLine is a .PHONY declaration; its targets follow the colon.
var phonyLine = regexp.MustCompile(`^\.PHONY\s*:(.*)$`)

// Target is a target name and the line (1-based) of the Makefile that
// declares or lists it.
type Target struct {
	Name string
	Line int
}

// Listed is a target a help recipe lists, and its help text.
type Listed struct {
	Target
	Text string
	// All is true for a target `make help-all` lists ("### "), false for
	// an everyday one `make help` lists ("## ").
	All bool
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

// Help returns the rules either help recipe lists, in the Makefile's
// order, with their help texts trimmed.
func Help(makefile string) []Listed {
	var out []Listed
	for i, l := range strings.Split(makefile, "\n") {
		if m := HelpRule.FindStringSubmatch(l); m != nil {
			out = append(out, Listed{Target{m[1], i + 1}, strings.TrimSpace(m[3]), m[2] == "###"})
		}
	}
	return out
}

// Lines returns the lines the help recipe prints for the targets of
// listed with All equal to all (`make help-all` when true, `make help`
// when false), in order: two spaces, the name padded to the longest name
// in that list, two spaces, the text.
func Lines(listed []Listed, all bool) []string {
	w := 0
	for _, l := range listed {
		if l.All == all {
			w = max(w, len(l.Name))
		}
	}
	var out []string
	for _, l := range listed {
		if l.All == all {
			out = append(out, fmt.Sprintf("  %-*s  %s", w, l.Name, l.Text))
		}
	}
	return out
}

// recipe names the help recipe that lists l.
func recipe(l Listed) string {
	if l.All {
		return "make help-all"
	}
	return "make help"
}

// Check returns, in the Makefile's order, every listed target with an
// empty text, a printed line of more than MaxLine characters, a second
// rule line, or no .PHONY declaration; the everyday targets past
// MaxEveryday; and every .PHONY target neither recipe lists. A Makefile
// with none of these gets nil.
func Check(makefile string) []Problem {
	phony := map[string]bool{}
	for _, p := range Phony(makefile) {
		phony[p.Name] = true
	}
	listed := Help(makefile)
	printed := map[bool][]string{false: Lines(listed, false), true: Lines(listed, true)}
	next := map[bool]int{}
	first := map[string]Listed{}
	everyday := 0
	var problems []Problem
	for _, l := range listed {
		text := printed[l.All][next[l.All]]
		next[l.All]++
		if prev, ok := first[l.Name]; ok {
			problems = append(problems, Problem{l.Target, fmt.Sprintf("listed a second time (first at Makefile:%d, by %s): give each target one rule line with a help text", prev.Line, recipe(prev))})
			continue
		}
		first[l.Name] = l
		if l.Text == "" {
			problems = append(problems, Problem{l.Target, "empty help text after its mark"})
		}
		if n := utf8.RuneCountInString(text); n > MaxLine {
			problems = append(problems, Problem{l.Target, fmt.Sprintf("%s prints a line of %d characters, more than %d: keep the text short and say the rest in a comment above the rule", recipe(l), n, MaxLine)})
		}
		if !l.All {
			everyday++
			if everyday == MaxEveryday+1 {
				problems = append(problems, Problem{l.Target, fmt.Sprintf(`make help lists more than %d targets from here on: mark the least everyday rules "### " for make help-all`, MaxEveryday)})
			}
		}
		if !phony[l.Name] {
			problems = append(problems, Problem{l.Target, recipe(l) + " lists it, but it is not declared .PHONY"})
		}
	}
	for _, p := range Phony(makefile) {
		if _, ok := first[p.Name]; !ok {
			problems = append(problems, Problem{p, `declared .PHONY, but no help recipe lists it: end its rule line with "## <what it does> (~<how long>)" for make help (everyday targets) or "### ..." for make help-all`})
		}
	}
	return problems
}
