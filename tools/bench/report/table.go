package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
)

// WriteAligned prints header and rows as a text table with right-aligned
// columns.
func WriteAligned(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	return tw.Flush()
}

// Cells turns each row into its table cells with cells, in order: the
// rows argument of WriteAligned and WriteMarkdownTable.
func Cells[R any](rows []R, cells func(R) []string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = cells(r)
	}
	return out
}

// WriteMarkdownTable prints header and rows as a markdown table whose
// columns from firstNumeric up to the last one (a notes column, left
// aligned) are right-aligned. A cell that is exactly `""` (an empty
// resourceVersion) is shown as code, so that it reads as the value.
func WriteMarkdownTable(w io.Writer, header []string, rows [][]string, firstNumeric int) {
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
		if i >= firstNumeric && i < len(header)-1 {
			seps[i] = "---:"
		}
	}
	fmt.Fprintln(w, "|"+strings.Join(seps, "|")+"|")
	for _, r := range rows {
		c := append([]string(nil), r...)
		for i := range c {
			if c[i] == `""` {
				c[i] = "`\"\"`"
			}
		}
		fmt.Fprintln(w, "| "+strings.Join(c, " | ")+" |")
	}
}

// Num prints a figure with three significant digits, or as an integer
// from 100 up.
func Num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// FailureNotes are the notes a row's failures add to its notes column:
// the ops whose item count was wrong, and the errors with the first one
// cut to 80 bytes. A row without failures adds none.
func FailureNotes(wrongCounts, errors int64, firstError string) []string {
	var notes []string
	if wrongCounts > 0 {
		notes = append(notes, fmt.Sprintf("WRONG COUNT x%d", wrongCounts))
	}
	if errors > 0 {
		e := firstError
		if len(e) > 80 {
			e = e[:80] + "..."
		}
		notes = append(notes, fmt.Sprintf("%d errors: %s", errors, e))
	}
	return notes
}

// CompareFloat orders a before b as -1, after as 1, and otherwise (equal,
// or either NaN) as 0: the comparison the report tables and plots sort by.
func CompareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FirstError keeps the first error message it is given, for the many
// goroutines of one measured row. Its zero value is ready.
type FirstError struct {
	once sync.Once
	msg  atomic.Value
}

// Set keeps msg unless a message was set before.
func (f *FirstError) Set(msg string) { f.once.Do(func() { f.msg.Store(msg) }) }

// Get is the first message, or "".
func (f *FirstError) Get() string {
	if v, ok := f.msg.Load().(string); ok {
		return v
	}
	return ""
}
