package upstreame2e

import (
	"encoding/xml"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Outcome is what happened to one test in a run.
type Outcome string

// The outcomes a run reports. Ginkgo's timedout, panicked, interrupted and
// aborted count as failed.
const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
)

// Result is one test's outcome in a run.
type Result struct {
	Name    string
	Outcome Outcome
	// Status is ginkgo's own word for it (passed, failed, timedout, ...).
	Status string
	// Seconds is how long the test ran.
	Seconds float64
	// Message is the first line of the failure or skip message.
	Message string
}

type junitSuites struct {
	Suites []struct {
		Cases []struct {
			Name    string  `xml:"name,attr"`
			Status  string  `xml:"status,attr"`
			Time    float64 `xml:"time,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// labelList is the " [a, b]" ginkgo appends to a spec's name in junit.
var labelList = regexp.MustCompile(` \[[^\[\]]*\]$`)

// SpecName turns a junit test case name ("[It] <text> [labels]") into the
// name tests.txt uses (<text>); ok is false for suite nodes (BeforeSuite,
// ReportAfterSuite, ...).
func SpecName(junitName string) (string, bool) {
	text, ok := strings.CutPrefix(junitName, "[It] ")
	if !ok {
		return "", false
	}
	return labelList.ReplaceAllString(text, ""), true
}

// ReadJUnit reads ginkgo's junit report and returns the spec results by
// name, and the suite nodes that did not pass (a failed BeforeSuite fails
// the run even if no spec ran).
func ReadJUnit(path string) (map[string]Result, []Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var js junitSuites
	if err := xml.Unmarshal(data, &js); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	specs := map[string]Result{}
	var suite []Result
	for _, s := range js.Suites {
		for _, c := range s.Cases {
			r := Result{Status: c.Status, Seconds: c.Time}
			switch c.Status {
			case "passed":
				r.Outcome = Passed
			case "skipped", "pending":
				r.Outcome = Skipped
			default:
				r.Outcome = Failed
			}
			switch {
			case c.Failure != nil:
				r.Message = c.Failure.Message
			case c.Error != nil:
				r.Message = c.Error.Message
			case c.Skipped != nil:
				r.Message = c.Skipped.Message
			}
			r.Message, _, _ = strings.Cut(strings.TrimSpace(r.Message), "\n")
			name, ok := SpecName(c.Name)
			if !ok {
				if r.Outcome == Failed {
					r.Name = c.Name
					suite = append(suite, r)
				}
				continue
			}
			r.Name = name
			specs[name] = r
		}
	}
	return specs, suite, nil
}

// Counts are a run's totals over the selection.
type Counts struct{ Passed, Failed, Skipped int }

// Tally counts the outcomes of the selected tests. A selected test missing
// from the report counts as failed: it never ran.
func Tally(sel []string, specs map[string]Result) (Counts, []string) {
	var c Counts
	var missing []string
	for _, n := range sel {
		r, ok := specs[n]
		switch {
		case !ok:
			c.Failed++
			missing = append(missing, n)
		case r.Outcome == Passed:
			c.Passed++
		case r.Outcome == Skipped:
			c.Skipped++
		default:
			c.Failed++
		}
	}
	sort.Strings(missing)
	return c, missing
}
