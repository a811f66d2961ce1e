package upstreame2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// ListFile is the selection, relative to this package.
const ListFile = "tests.txt"

// skipPrefix starts a line that names a test left out; reasonSep
// separates its name from the reason. nodePrefix starts a line that names
// a test run only on a cluster with a real node (containers that run);
// hollowPrefix one run only on hollow nodes, with the reason it cannot run
// on the real node (an image that cannot be built here, say).
const (
	skipPrefix   = "skip: "
	reasonSep    = " ## "
	nodePrefix   = "node: "
	hollowPrefix = "hollow: "
)

// hollowReason is why a test of a "node: " line is left out of a run on
// hollow nodes only.
const hollowReason = "needs containers that run: runs only with a real node (make test-conformance)"

// Selection is the parsed list file.
type Selection struct {
	// Run are the names of the tests to run, in file order.
	Run []string
	// Node are the tests that need a real node, in file order; ForCluster
	// adds them to Run or to Skipped.
	Node []string
	// Hollow are the tests run on hollow nodes only, in file order, with
	// the reason each cannot run on the real node.
	Hollow       []string
	HollowReason map[string]string
	// Skipped maps each test left out to its reason.
	Skipped map[string]string
}

// ForCluster is the selection for a cluster with a real node (Run and
// Node are run) or with hollow nodes only (Node tests are left out).
func (s *Selection) ForCluster(realNode bool) *Selection {
	out := &Selection{Run: append([]string(nil), s.Run...), Skipped: make(map[string]string, len(s.Skipped)+len(s.Node))}
	for n, r := range s.Skipped {
		out.Skipped[n] = r
	}
	for _, n := range s.Node {
		if realNode {
			out.Run = append(out.Run, n)
		} else {
			out.Skipped[n] = hollowReason
		}
	}
	for _, n := range s.Hollow {
		if realNode {
			out.Skipped[n] = s.HollowReason[n]
		} else {
			out.Run = append(out.Run, n)
		}
	}
	return out
}

// ReadSelection parses the list file at path.
func ReadSelection(path string) (*Selection, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ParseSelection(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSelection parses a list file: one test name per line, "node:
// <name>" for a test that needs a real node, "hollow: <name> ## <reason>"
// for one that runs on hollow nodes only, "skip: <name> ## <reason>" for
// a test left out, '#' comments and blank lines ignored.
// A name listed twice, or a skip without a reason, is an error.
func ParseSelection(r io.Reader) (*Selection, error) {
	s := &Selection{Skipped: map[string]string{}, HollowReason: map[string]string{}}
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if rest, ok := strings.CutPrefix(line, skipPrefix); ok {
			var reason string
			if name, reason, ok = cutReason(rest); !ok {
				return nil, fmt.Errorf("line %d: a skipped test needs a reason after %q: %q", n, strings.TrimSpace(reasonSep), line)
			}
			s.Skipped[name] = reason
		} else if rest, ok := strings.CutPrefix(line, hollowPrefix); ok {
			var reason string
			if name, reason, ok = cutReason(rest); !ok {
				return nil, fmt.Errorf("line %d: a hollow-only test needs the reason it cannot run on the real node after %q: %q", n, strings.TrimSpace(reasonSep), line)
			}
			s.Hollow = append(s.Hollow, name)
			s.HollowReason[name] = reason
		} else if rest, ok := strings.CutPrefix(line, nodePrefix); ok {
			name = strings.TrimSpace(rest)
			s.Node = append(s.Node, name)
		} else {
			s.Run = append(s.Run, name)
		}
		if first, dup := seen[name]; dup {
			return nil, fmt.Errorf("line %d: %q is listed already on line %d", n, name, first)
		}
		seen[name] = n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// cutReason splits "<name> ## <reason>"; ok is false without a reason.
func cutReason(rest string) (name, reason string, ok bool) {
	name, reason, ok = strings.Cut(rest, reasonSep)
	name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
	return name, reason, ok && reason != ""
}

// Focus is the ginkgo --focus expression that selects exactly s.Run: each
// name quoted and anchored at its end. (Ginkgo does not match the text of
// a spec from its first character, so "^" would select nothing; Check
// proves that each name, so anchored, picks one test only.)
func (s *Selection) Focus() string {
	parts := make([]string, len(s.Run))
	for i, n := range s.Run {
		parts[i] = pattern(n)
	}
	return strings.Join(parts, "|")
}

func pattern(name string) string { return regexp.QuoteMeta(name) + "$" }

// Check compares the selection with the names of every test the binary has
// (from a dry run). Every listed name, run or skipped, must name a test,
// and the focus of each test to run must select that test alone.
func (s *Selection) Check(all []string) error {
	have := map[string]bool{}
	for _, n := range all {
		have[n] = true
	}
	var bad []string
	for _, n := range append(append(append([]string(nil), s.Run...), s.Node...), s.Hollow...) {
		if !have[n] {
			bad = append(bad, n)
			continue
		}
		rx := regexp.MustCompile(pattern(n))
		var also []string
		for _, other := range all {
			if other != n && rx.MatchString(other) {
				also = append(also, other)
			}
		}
		if len(also) > 0 {
			bad = append(bad, fmt.Sprintf("%s (its focus also selects %s)", n, strings.Join(also, "; ")))
		}
	}
	for n := range s.Skipped {
		if !have[n] {
			bad = append(bad, "skip: "+n)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%d listed tests are not in e2e.test or are not selected alone:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return nil
}
