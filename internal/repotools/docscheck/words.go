package docscheck

import (
	"fmt"
	"strings"
)

// WordLimits are the files that must stay short, with the most words
// each may have, counted as wc -w counts them (Words). The KEP is a review
// artifact: the figures and lab notes behind it live in
// docs/investigations/kep-evidence.md and docs/results, not in it.
var WordLimits = map[string]int{
	"docs/kep.md": 6000,
}

// Words counts the whitespace-separated fields of text, as wc -w does;
// markup and figure markers count like any other word.
func Words(text string) int {
	return len(strings.Fields(text))
}

// WordLimitProblems reports file when text has more than limit words.
func WordLimitProblems(file, text string, limit int) []Problem {
	if n := Words(text); n > limit {
		return []Problem{{File: file, Msg: fmt.Sprintf("%d words, more than the %d allowed: link to docs/investigations or docs/results instead of quoting", n, limit)}}
	}
	return nil
}
