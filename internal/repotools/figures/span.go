package figures

import (
	"fmt"
	"regexp"
	"strings"
)

// A marked span in a markdown file:
//
//	<!-- fig:cluster.etcd-reads -->0.46<!-- /fig -->
//
// The key names a Figure; the text between the markers is what the
// generator rewrites and the check compares. A span may cover several
// lines (a whole table, a quoted block); the white space just inside its
// markers is kept when it is rewritten.
const closeMarker = "<!-- /fig -->"

var openRE = regexp.MustCompile(`<!-- fig:([A-Za-z0-9._-]+) -->`)

// Span is one marked span of a file.
type Span struct {
	Key string
	// Line is the 1-based line of the opening marker.
	Line int
	// Start and End delimit the text between the markers: text[Start:End].
	Start, End int
}

// Spans finds the marked spans of text, in order, and what is malformed
// about its markers (an opening marker with no closing one, a closing one
// with no opening one, nested spans).
func Spans(text string) ([]Span, []Problem) {
	var spans []Span
	var problems []Problem
	line := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	pos := 0
	for {
		open := openRE.FindStringSubmatchIndex(text[pos:])
		closeAt := strings.Index(text[pos:], closeMarker)
		if open == nil {
			if closeAt >= 0 {
				problems = append(problems, Problem{Line: line(pos + closeAt), Msg: "a closing " + closeMarker + " with no opening marker"})
			}
			return spans, problems
		}
		if closeAt >= 0 && closeAt < open[0] {
			problems = append(problems, Problem{Line: line(pos + closeAt), Msg: "a closing " + closeMarker + " with no opening marker"})
			pos += closeAt + len(closeMarker)
			continue
		}
		key := text[pos+open[2] : pos+open[3]]
		start := pos + open[1]
		end := strings.Index(text[start:], closeMarker)
		if end < 0 {
			problems = append(problems, Problem{Line: line(pos + open[0]), Msg: fmt.Sprintf("fig:%s is never closed with %s", key, closeMarker)})
			return spans, problems
		}
		if next := openRE.FindStringIndex(text[start : start+end]); next != nil {
			problems = append(problems, Problem{Line: line(start + next[0]), Msg: fmt.Sprintf("a span opens inside fig:%s; spans do not nest", key)})
			pos = start + end + len(closeMarker)
			continue
		}
		spans = append(spans, Span{Key: key, Line: line(pos + open[0]), Start: start, End: start + end})
		pos = start + end + len(closeMarker)
	}
}

// replaceSpan returns old's leading and trailing white space around text,
// so that a span written on lines of its own stays on lines of its own.
// An empty span on lines of its own ("\n") gets text on lines of its own,
// and a span that opens on a line of its own closes on one.
func replaceSpan(old, text string) string {
	if strings.TrimSpace(old) == "" {
		if strings.Contains(old, "\n") {
			return "\n" + text + "\n"
		}
		return text
	}
	lead := old[:len(old)-len(strings.TrimLeft(old, " \t\n"))]
	trail := old[len(strings.TrimRight(old, " \t\n")):]
	if strings.Contains(lead, "\n") && !strings.Contains(trail, "\n") {
		trail = "\n" // a block span closes on a line of its own
	}
	return lead + text + trail
}
