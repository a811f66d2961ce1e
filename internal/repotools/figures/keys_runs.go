package figures

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The figures of the runs whose results are markdown (robustness,
// kubernetes#59848 replay, upstream's e2e tests, fault heal) and of the
// stall and watch-list benchmarks.

func runFigures() []Figure {
	return slices.Concat(robustnessFigures(), demoFigures(), kindDemoFigures(), kindUpgradeFigures(), e2eKindFigures(), e2eFigures(), otherRunFigures())
}

func mdCommitFigure(name string) Figure {
	file := name + ".md"
	return Figure{Key: name + ".commit", From: []string{file}, What: "the commit " + file + " was run at", Get: func(s *Source) (Value, error) {
		return s.mdCommit(file)
	}}
}

func robustnessFigures() []Figure {
	const file = "robustness.md"
	// cell is the first number of the row whose first cell contains row,
	// in column col, of the table under heading.
	cell := func(s *Source, heading, row string, col int) (float64, error) {
		t, err := s.table(file, heading)
		if err != nil {
			return 0, err
		}
		rows := t.rowsWhere(row)
		if len(rows) == 0 || col >= len(rows[0]) {
			return 0, fmt.Errorf("%w: %s has no row %q under %q", ErrNotInResults, file, row, heading)
		}
		return firstNumber(rows[0][col])
	}
	count := func(key, what, heading, row string, col int) Figure {
		return Figure{Key: key, From: []string{file}, What: what, Get: func(s *Source) (Value, error) {
			n, err := cell(s, heading, row, col)
			return F(n, 0), err
		}}
	}
	millions := func(key, what, heading, row string, col int) Figure {
		return Figure{Key: key, From: []string{file}, What: what + ", millions", Get: func(s *Source) (Value, error) {
			n, err := cell(s, heading, row, col)
			return F(n/1e6, 1), err
		}}
	}
	// short is a column of the short runs with multi-key writes, over
	// its three variants.
	short := func(key, what, col string) Figure {
		return Figure{Key: key, From: []string{file}, What: what + ", over the short runs' three variants", Get: func(s *Source) (Value, error) {
			t, err := s.table(file, "Results", "variant", col)
			if err != nil {
				return Value{}, err
			}
			var xs []float64
			for _, r := range t.Rows {
				x, err := t.cellNumber(r, col)
				if err != nil {
					return Value{}, err
				}
				xs = append(xs, x)
			}
			return Range(xs, 0), nil
		}}
	}
	shortViolations := func(key, what, variant string) Figure {
		return Figure{Key: key, From: []string{file}, What: what, Get: func(s *Source) (Value, error) {
			t, err := s.table(file, "Results", "variant", "violations")
			if err != nil {
				return Value{}, err
			}
			rows := t.rowsWhere(variant)
			if len(rows) != 1 {
				return Value{}, fmt.Errorf("%w: %d short-run rows of %q", ErrNotInResults, len(rows), variant)
			}
			return violations(rows[0][t.col("violations")])
		}}
	}
	const long, http = "Long runs (30 minutes)", "Over HTTP"
	return []Figure{
		count("robustness.long.upstream.time-travel", "time-travel violations of upstream's cacher at rv=0 in the 30-minute run", long, "time-travel", 1),
		count("robustness.long.freshcache.time-travel", "time-travel violations of freshcache with FreshResourceVersionZero in the 30-minute run", long, "time-travel", 2),
		millions("robustness.long.upstream.porcupine", "key operations porcupine checked in upstream's 30-minute run", long, "porcupine", 1),
		millions("robustness.long.freshcache.porcupine", "key operations porcupine checked in freshcache's 30-minute run", long, "porcupine", 2),
		count("robustness.http.upstream.time-travel", "time-travel violations of upstream's cacher over HTTP (two real kube-apiservers)", http, "violations", 1),
		{Key: "robustness.http.freshcache.violations", From: []string{file}, What: "violations of freshcache with FreshResourceVersionZero over HTTP", Get: func(s *Source) (Value, error) {
			t, err := s.table(file, http)
			if err != nil {
				return Value{}, err
			}
			rows := t.rowsWhere("violations")
			if len(rows) == 0 {
				return Value{}, fmt.Errorf("%w: no violations row under %q", ErrNotInResults, http)
			}
			return violations(rows[0][2])
		}},
		short("robustness.short.ops", "operations", "ops"),
		short("robustness.short.txns", "multi-key transactions that applied", "multi-key txns"),
		short("robustness.short.lease-expiries", "lease expiries", "lease expiries"),
		shortViolations("robustness.short.upstream.time-travel", "time-travel violations of upstream's cacher at rv=0 in the short run", "upstream"),
		shortViolations("robustness.short.freshcache.violations", `violations of freshcache with rv="" in the short run`, `freshcache, rv=""`),
		shortViolations("robustness.short.gate.violations", "violations of freshcache with FreshResourceVersionZero in the short run", "FreshResourceVersionZero"),
		{Key: "robustness.before-gate.violations", From: []string{file}, What: "violations of freshcache's rv=0 variant before FreshResourceVersionZero was wired in", Get: func(s *Source) (Value, error) {
			m, err := s.submatch(file, regexp.MustCompile(`\*\*([\d,]+) violations\*\*`))
			if err != nil {
				return Value{}, err
			}
			n, err := firstNumber(m[1])
			return F(n, 0), err
		}},
	}
}

// violations is what a violations cell says: the time-travel count in
// "time-travel 15, all others 0", or 0 in "0 on every checker".
func violations(cell string) (Value, error) {
	if _, after, ok := strings.Cut(cell, "time-travel "); ok {
		n, err := firstNumber(after)
		return F(n, 0), err
	}
	n, err := firstNumber(cell)
	return F(n, 0), err
}

func demoFigures() []Figure {
	const file = "demo-59848.md"
	// verdict is for a listing kubelet; with a watch-list one the docs
	// quote only demo-59848.watchlist-on.started.
	verdict := func(impl, watchlist string) Figure {
		return Figure{Key: fmt.Sprintf("demo-59848.%s.watchlist-%s", impl, watchlist), From: []string{file},
			What: fmt.Sprintf(`"N of M": trials of %s with the kubelet's watch-list %s that started the deleted pod again`, impl, watchlist),
			Get: func(s *Source) (Value, error) {
				n, m, err := s.demoVerdict(file, impl, watchlist)
				return Join(Count(n), " of ", Count(m)), err
			}}
	}
	var figs []Figure
	for _, impl := range []string{"upstream", "freshcache", "freshcache-rv0-off"} {
		figs = append(figs, verdict(impl, "off"))
	}
	ranRE := regexp.MustCompile(`Ran: (\d{4}-\d\d-\d\d) (\d\d:\d\d) to (\d\d:\d\d) UTC, on commit ` + "`([0-9a-f]+)`")
	return append(figs,
		Figure{Key: "demo-59848.commit", From: []string{file}, What: "the commit the replay ran at", Get: func(s *Source) (Value, error) {
			m, err := s.submatch(file, ranRE)
			if err != nil {
				return Value{}, err
			}
			return Text("`" + m[4][:7] + "`"), nil
		}},
		ranDate("demo-59848", file, ranRE, "the replay"),
		ranMinutes("demo-59848", file, ranRE, "the whole replay"),
		Figure{Key: "demo-59848.watchlist-on.started", From: []string{file}, What: `trials with a watch-list kubelet that started the deleted pod, every implementation ("none")`, Get: func(s *Source) (Value, error) {
			total := 0
			for _, impl := range []string{"upstream", "freshcache", "freshcache-rv0-off"} {
				n, _, err := s.demoVerdict(file, impl, "on")
				if err != nil {
					return Value{}, err
				}
				total += n
			}
			return Word(total), nil
		}},
		Figure{Key: "demo-59848.observed-s", From: []string{file}, What: "how long each trial watched the restarted kubelet, s", Get: func(s *Source) (Value, error) {
			m, err := s.submatch(file, regexp.MustCompile(`watched for ([0-9hms.]+?)\.(?:\s|$)`))
			if err != nil {
				return Value{}, err
			}
			d, err := time.ParseDuration(m[1])
			return F(d.Seconds(), 0), err
		}},
		Figure{Key: "demo-59848.upstream.first-container-s", From: []string{file}, What: "how long after the restart containerd created the old web-0's first container, upstream with a listing kubelet, s", Get: func(s *Source) (Value, error) {
			first, _, err := s.demoStartedTrials("upstream-watchlist-off")
			return Range(first, 1), err
		}},
		Figure{Key: "demo-59848.upstream.overlap-s", From: []string{file}, What: "seconds the old web-0 ran beside its replacement, upstream with a listing kubelet", Get: func(s *Source) (Value, error) {
			_, overlap, err := s.demoStartedTrials("upstream-watchlist-off")
			return Range(overlap, 0), err
		}},
		Figure{Key: "demo-59848.trial-s", From: []string{file}, What: "how long one trial took, s, over every trial", Get: func(s *Source) (Value, error) {
			t, rows, err := s.demoTrials("")
			if err != nil {
				return Value{}, err
			}
			var secs []float64
			for _, r := range rows {
				d, err := time.ParseDuration(r[t.col("took")])
				if err != nil {
					return Value{}, fmt.Errorf("%w: trial took %q", ErrNotInResults, r[t.col("took")])
				}
				secs = append(secs, d.Seconds())
			}
			return Range(secs, 0), nil
		}},
		Figure{Key: "demo-59848.closing-lines", From: []string{file}, What: "the closing lines, each cut before its evidence, as a code block", Get: func(s *Source) (Value, error) {
			lines, err := s.demoClosingLines(file)
			return Text("```\n" + strings.Join(lines, "\n") + "\n```"), err
		}},
	)
}

// ranDate is NAME.date, the day in the first group of ranRE's match in
// file ("Ran: DAY FROM to TO UTC").
func ranDate(name, file string, ranRE *regexp.Regexp, what string) Figure {
	return Figure{Key: name + ".date", From: []string{file}, What: "the day " + what + " ran", Get: func(s *Source) (Value, error) {
		m, err := s.submatch(file, ranRE)
		if err != nil {
			return Value{}, err
		}
		return Text(m[1]), nil
	}}
}

// ranMinutes is NAME.run-minutes, from the second and third groups of
// ranRE's match in file (FROM and TO, HH:MM, across midnight too).
func ranMinutes(name, file string, ranRE *regexp.Regexp, what string) Figure {
	return Figure{Key: name + ".run-minutes", From: []string{file}, What: "how long " + what + " ran, minutes", Get: func(s *Source) (Value, error) {
		m, err := s.submatch(file, ranRE)
		if err != nil {
			return Value{}, err
		}
		n, err := minutesBetween(m[2], m[3])
		return Count(n), err
	}}
}

// kindDemoFigures quote make demo-59848-kind's report: its closing lines
// have make demo-59848's form.
func kindDemoFigures() []Figure {
	const file = "demo-59848-kind.md"
	// The discriminating pair, with a listing kubelet; the closing lines
	// quote the rest.
	var figs []Figure
	for _, impl := range []string{"upstream", "freshcache"} {
		figs = append(figs, Figure{Key: fmt.Sprintf("demo-59848-kind.%s.watchlist-off", impl), From: []string{file},
			What: fmt.Sprintf(`"N of M": kind trials of %s with a listing kubelet that started the deleted pod again`, impl),
			Get: func(s *Source) (Value, error) {
				n, m, err := s.demoVerdict(file, impl, "off")
				return Join(Count(n), " of ", Count(m)), err
			}})
	}
	ranRE := regexp.MustCompile(`Ran: (\d{4}-\d\d-\d\d) (\d\d:\d\d) to (\d\d:\d\d) UTC`)
	return append(figs,
		mdCommitFigure("demo-59848-kind"),
		ranDate("demo-59848-kind", file, ranRE, "the kind replay"),
		ranMinutes("demo-59848-kind", file, ranRE, "the whole kind replay"),
		Figure{Key: "demo-59848-kind.closing-lines", From: []string{file}, What: "the kind replay's closing lines, each cut before its evidence, as a code block", Get: func(s *Source) (Value, error) {
			lines, err := s.demoClosingLines(file)
			return Text("```\n" + strings.Join(lines, "\n") + "\n```"), err
		}},
	)
}

// kindUpgradeFigures quote make test-kind-upgrade's report: its closing
// line, and from it the stale answers and each phase's failed reads.
func kindUpgradeFigures() []Figure {
	const file = "kind-upgrade.md"
	lineRE := regexp.MustCompile(`(?m)^kind-upgrade: stale=(\d+) failed-reads=(\d+)/(\d+)/(\d+) .* relists=(\d+)/(\d+)/(\d+) .*$`)
	// counts are lineRE's numbers, in its order.
	counts := func(s *Source) ([]int, error) {
		m, err := s.submatch(file, lineRE)
		if err != nil {
			return nil, err
		}
		var out []int
		for _, d := range m[1:] {
			n, err := strconv.Atoi(d)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	}
	figs := []Figure{
		mdCommitFigure("kind-upgrade"),
		ranDate("kind-upgrade", file, regexp.MustCompile(`Date: (\d{4}-\d\d-\d\d)`), "the rolling upgrade on kind"),
		{Key: "kind-upgrade.closing-line", From: []string{file}, What: "the rolling upgrade's closing line, as a code block", Get: func(s *Source) (Value, error) {
			m, err := s.submatch(file, lineRE)
			if err != nil {
				return Value{}, err
			}
			return Text("```\n" + m[0] + "\n```"), nil
		}},
	}
	for i, name := range []string{"stale", "failed-reads.restart", "failed-reads.upgrade", "failed-reads.rollback"} {
		figs = append(figs, Figure{Key: "kind-upgrade." + name, From: []string{file}, What: "the rolling upgrade's " + name + " (all steps of the phase)", Get: func(s *Source) (Value, error) {
			c, err := counts(s)
			if err != nil {
				return Value{}, err
			}
			return Count(c[i]), nil
		}})
	}
	return append(figs, Figure{Key: "kind-upgrade.relists", From: []string{file}, What: "the rolling upgrade's informer relists, over every phase", Get: func(s *Source) (Value, error) {
		c, err := counts(s)
		if err != nil {
			return Value{}, err
		}
		return Count(c[4] + c[5] + c[6]), nil
	}})
}

// e2eKindFigures quote make test-kind's report: per implementation it
// ran, the tests passed and failed.
func e2eKindFigures() []Figure {
	const file = "e2e-kind.md"
	figs := []Figure{mdCommitFigure("e2e-kind")}
	for _, impl := range []string{"upstream", "freshcache-fresh-rv0"} {
		for _, col := range []string{"passed", "failed"} {
			figs = append(figs, Figure{Key: "e2e-kind." + impl + "." + col, From: []string{file}, What: "upstream's e2e tests on kind that " + col + " on " + impl, Get: func(s *Source) (Value, error) {
				t, err := s.table(file, "", "implementation", col)
				if err != nil {
					return Value{}, err
				}
				rows := t.rowsWhere(impl)
				if len(rows) != 1 {
					return Value{}, fmt.Errorf("%w: %s has %d %s rows, want 1", ErrNotInResults, file, len(rows), impl)
				}
				n, err := t.cellNumber(rows[0], col)
				return F(n, 0), err
			}})
		}
	}
	return figs
}

func e2eFigures() []Figure {
	const file = "e2e-conformance.md"
	return []Figure{
		mdCommitFigure("e2e-conformance"),
		{Key: "e2e-conformance.passed", From: []string{file}, What: "tests that passed on every implementation (the fewest of the runs)", Get: func(s *Source) (Value, error) {
			t, err := s.table(file, "", "implementation", "passed")
			if err != nil {
				return Value{}, err
			}
			var passed []float64
			for _, r := range t.Rows {
				n, err := t.cellNumber(r, "passed")
				if err != nil {
					return Value{}, err
				}
				passed = append(passed, n)
			}
			return F(slices.Min(passed), 0), nil
		}},
		{Key: "e2e-conformance.fresh-reads", From: []string{file}, What: "reads that needed freshness in each freshcache run, to the thousand (a range when the runs differ)", Get: func(s *Source) (Value, error) {
			reads, err := s.e2eReads()
			if err != nil {
				return Value{}, err
			}
			var totals []float64
			for _, byOutcome := range reads {
				n := 0
				for _, c := range byOutcome {
					n += c
				}
				totals = append(totals, float64(n))
			}
			return RangeOf(totals, func(x float64) Value {
				v := F(x/1000, 0)
				return Value{Text: v.Text + ",000", Nums: []Num{{x, 500}}}
			}), nil
		}},
		{Key: "e2e-conformance.from-etcd", From: []string{file}, What: `freshness reads the freshcache runs served from etcd or refused ("none")`, Get: func(s *Source) (Value, error) {
			reads, err := s.e2eReads()
			if err != nil {
				return Value{}, err
			}
			n := 0
			for _, byOutcome := range reads {
				for outcome, c := range byOutcome {
					if outcome != "cache" {
						n += c
					}
				}
			}
			return Word(n), nil
		}},
	}
}

func otherRunFigures() []Figure {
	return []Figure{
		mdCommitFigure("fault-heal"),
		{Key: "stall.commit", From: []string{"stall.json"}, What: "the commit the stall benchmark ran at", Get: func(s *Source) (Value, error) {
			r, err := loadJSON[stallReport](s, "stall.json")
			if err != nil {
				return Value{}, err
			}
			if len(r.Commit) < 7 {
				return Value{}, fmt.Errorf("%w: stall.json names no commit", ErrNotInResults)
			}
			return Text("`" + r.Commit[:7] + "`"), nil
		}},
		{Key: "stall.unbounded.apiserver-growth", From: []string{"stall.json"}, What: "apiserver RSS growth of freshcache with no fallback budget (peak over pre-stall)", Get: func(s *Source) (Value, error) {
			r, err := loadJSON[stallReport](s, "stall.json")
			if err != nil {
				return Value{}, err
			}
			for _, c := range r.Configurations {
				if c.Name == "freshcache-unbounded" {
					return F(c.APIServerRSS.Growth, 1), nil
				}
			}
			return Value{}, fmt.Errorf("%w: stall.json has no freshcache-unbounded run", ErrNotInResults)
		}},
		{Key: "watchlist.fresh-vs-upstream-p99", From: []string{"watchlist.json"}, What: "fresh reads' p99 while WatchLists run, each freshcache configuration over upstream, per read kind", Get: func(s *Source) (Value, error) {
			r, err := loadJSON[watchlistReport](s, "watchlist.json")
			if err != nil {
				return Value{}, err
			}
			const phase = "reads+watchlists"
			p99s := map[string]map[string]float64{}
			for _, run := range r.Runs {
				for _, ph := range run.Phases {
					if ph.Name != phase {
						continue
					}
					p99s[run.Config] = map[string]float64{}
					for _, rd := range ph.Reads {
						p99s[run.Config][rd.Kind] = rd.P99Ms
					}
				}
			}
			up, ok := p99s[cfgUpstream]
			if !ok {
				return Value{}, fmt.Errorf("%w: watchlist.json has no upstream %s phase", ErrNotInResults, phase)
			}
			var rs []float64
			for _, cfg := range []string{cfgFreshcache, cfgGate} {
				for kind, p := range p99s[cfg] {
					if u := up[kind]; u > 0 {
						rs = append(rs, p/u)
					}
				}
			}
			if len(rs) == 0 {
				return Value{}, fmt.Errorf("%w: watchlist.json pairs no read kind with upstream's", ErrNotInResults)
			}
			return Range(rs, 1), nil
		}},
	}
}
