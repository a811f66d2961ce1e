package figures

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Results that exist only as markdown (robustness.md, demo-59848.md,
// e2e-conformance.md, fault-heal.md) are read from their tables and
// closing lines.

var (
	commitRE   = regexp.MustCompile("(?i)commit:? `([0-9a-f]{7,40})")
	firstNumRE = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)
)

// mdCommit is the first commit a markdown results file names, shortened
// to 7 digits, in backticks as the docs quote commits.
func (s *Source) mdCommit(name string) (Value, error) {
	t, err := s.text(name)
	if err != nil {
		return Value{}, err
	}
	m := commitRE.FindStringSubmatch(t)
	if m == nil {
		return Value{}, fmt.Errorf("%w: %s names no commit", ErrNotInResults, name)
	}
	return Text("`" + m[1][:7] + "`"), nil
}

// submatch is the first match of re in the results file name.
func (s *Source) submatch(name string, re *regexp.Regexp) ([]string, error) {
	t, err := s.text(name)
	if err != nil {
		return nil, err
	}
	m := re.FindStringSubmatch(t)
	if m == nil {
		return nil, fmt.Errorf("%w: %s has nothing matching %s", ErrNotInResults, name, re)
	}
	return m, nil
}

// firstNumber is the first number in cell ("Ok over 4,592,920 key
// operations" is 4592920).
func firstNumber(cell string) (float64, error) {
	m := firstNumRE.FindString(cell)
	if m == "" {
		return 0, fmt.Errorf("%w: no number in %q", ErrNotInResults, cell)
	}
	return strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
}

// cellNumber is the first number in row's cell under column col of t.
func (t mdTable) cellNumber(row []string, col string) (float64, error) {
	i := t.col(col)
	if i < 0 || i >= len(row) {
		return 0, fmt.Errorf("%w: no column %q in the table under %q", ErrNotInResults, col, t.Heading)
	}
	return firstNumber(row[i])
}

// --- demo-59848.md ---

// demoVerdictRE is a closing line of the kubernetes#59848 replay.
var demoVerdictRE = regexp.MustCompile(`(?m)^demo-59848 (\S+) watchlist=(on|off): deleted pod started again: (yes|no) \((\d+) of (\d+) trials\)`)

// demoVerdict is "N of M": in how many trials of impl with the kubelet's
// watch-list on or off the deleted pod was started again, by the closing
// lines of file (demo-59848.md, or demo-59848-kind.md: the same form).
func (s *Source) demoVerdict(file, impl, watchlist string) (started, trials int, err error) {
	t, err := s.text(file)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range demoVerdictRE.FindAllStringSubmatch(t, -1) {
		if m[1] == impl && m[2] == watchlist {
			started, _ = strconv.Atoi(m[4])
			trials, _ = strconv.Atoi(m[5])
			return started, trials, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: %s has no closing line for %s watchlist=%s", ErrNotInResults, file, impl, watchlist)
}

// demoClosingLines are the closing lines, each cut before its evidence
// (" — "), as docs quote them.
func (s *Source) demoClosingLines(file string) ([]string, error) {
	t, err := s.text(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(t, "\n") {
		if demoVerdictRE.MatchString(l) {
			head, _, _ := strings.Cut(l, " — ")
			out = append(out, head)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no closing lines", ErrNotInResults, file)
	}
	return out, nil
}

var demoEvidenceRE = regexp.MustCompile(`created after the restart: yes, the first ([\d.]+)s after it; seconds in which it ran while the new web-0 \([^)]*\) ran on [^:]*: (\d+)`)

// demoTrials are the rows of the trials table of configuration (e.g.
// "upstream-watchlist-off"), or of every configuration when it is "".
func (s *Source) demoTrials(configuration string) (mdTable, [][]string, error) {
	t, err := s.table("demo-59848.md", "Trials", "configuration", "took", "evidence")
	if err != nil {
		return t, nil, err
	}
	var rows [][]string
	for _, r := range t.Rows {
		if configuration == "" || r[0] == configuration {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return t, nil, fmt.Errorf("%w: demo-59848.md has no trials of %q", ErrNotInResults, configuration)
	}
	return t, rows, nil
}

// demoStartedTrials are, for each trial of configuration whose old pod
// was started again, how long after the restart its first container was
// created and how many seconds it ran beside its replacement.
func (s *Source) demoStartedTrials(configuration string) (firstS, overlapS []float64, err error) {
	t, rows, err := s.demoTrials(configuration)
	if err != nil {
		return nil, nil, err
	}
	ev := t.col("evidence")
	for _, r := range rows {
		m := demoEvidenceRE.FindStringSubmatch(r[ev])
		if m == nil {
			continue
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		o, _ := strconv.ParseFloat(m[2], 64)
		firstS, overlapS = append(firstS, f), append(overlapS, o)
	}
	if len(firstS) == 0 {
		return nil, nil, fmt.Errorf("%w: no trial of %s started the old pod again", ErrNotInResults, configuration)
	}
	return firstS, overlapS, nil
}

// --- e2e-conformance.md ---

var e2eReadsRE = regexp.MustCompile(`(?m)^\*\*([a-z0-9-]+)\*\*: (.*)$`)
var e2eCountRE = regexp.MustCompile(`([a-z]+) ([a-z]+) ([a-z_]+) (\d+)`)

// e2eReads are the freshness reads of each freshcache run: by
// implementation, the counts by outcome.
func (s *Source) e2eReads() (map[string]map[string]int, error) {
	t, err := s.text("e2e-conformance.md")
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for _, m := range e2eReadsRE.FindAllStringSubmatch(t, -1) {
		byOutcome := map[string]int{}
		for _, c := range e2eCountRE.FindAllStringSubmatch(m[2], -1) {
			n, _ := strconv.Atoi(c[4])
			byOutcome[c[3]] += n
		}
		out[m[1]] = byOutcome
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: e2e-conformance.md counts no reads", ErrNotInResults)
	}
	return out, nil
}

// --- helpers ---

// minutesBetween is the whole minutes from "15:47" to "16:15".
func minutesBetween(from, to string) (int, error) {
	a, err := time.Parse("15:04", from)
	if err != nil {
		return 0, err
	}
	b, err := time.Parse("15:04", to)
	if err != nil {
		return 0, err
	}
	if b.Before(a) {
		b = b.Add(24 * time.Hour)
	}
	return int(b.Sub(a).Minutes()), nil
}
