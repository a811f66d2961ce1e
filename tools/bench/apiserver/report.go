package apiserver

import (
	"fmt"
	"io"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// Report is the JSON document an apiserver run writes to docs/results/
// (Kind "apiserver").
type Report struct {
	report.Identity

	Servers []Row `json:"apiserver,omitempty"`
}

// NewReport fills the run's identity: date, machine, commit and command.
func NewReport() Report { return Report{Identity: report.NewIdentity("apiserver")} }

// WriteJSON writes r, indented, to path.
func (r Report) WriteJSON(path string) error { return report.WriteJSON(path, r) }

// ReadReport reads a JSON report.
func ReadReport(path string) (Report, error) {
	var r Report
	err := report.ReadJSON(path, &r)
	return r, err
}

// WriteMarkdown writes the report as markdown: its identity, notes and
// rows.
func WriteMarkdown(w io.Writer, r Report) {
	r.WriteHeading(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- note: %s\n", n)
	}
	if len(r.Servers) > 0 {
		fmt.Fprintf(w, "\n## Through kube-apiserver\n\n")
		writeRowsMarkdown(w, r.Servers)
	}
}
