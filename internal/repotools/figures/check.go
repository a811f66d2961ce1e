package figures

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/freshcache/freshcache/internal/repotools/docscheck"
)

// Problem is one finding: a file, a 1-based line (0 when unknown) and what
// is wrong (docscheck's type, so that both checks print alike).
type Problem = docscheck.Problem

// Check compares every marked span of the markdown files among files
// (slash paths from the root of fsys, as git ls-files lists them) with
// what the results say, and checks the results index against the
// results directory. Problems come sorted by file and line.
func Check(fsys fs.FS, files []string) ([]Problem, error) {
	src := NewSource(fsys, files)
	var out []Problem
	for _, f := range markdown(fsys, files) {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		_, probs := rewrite(src, f, string(data))
		for _, p := range probs {
			out = append(out, p.Problem)
		}
	}
	probs, err := indexProblems(fsys)
	if err != nil {
		return nil, err
	}
	out = append(out, probs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// Rewrite returns text (the file named file) with every marked span set
// to what the results say, and the problems it could not fix: malformed
// markers, unknown keys, figures the results cannot give.
func Rewrite(src *Source, file, text string) (string, []Problem) {
	out, probs := rewrite(src, file, text)
	var left []Problem
	for _, p := range probs {
		if !p.fixable {
			left = append(left, p.Problem)
		}
	}
	return out, left
}

type spanProblem struct {
	Problem
	fixable bool // the span differs from the results; rewriting fixes it
}

// rewrite is Rewrite and Check in one pass: the rewritten text, and every
// problem, the differing spans marked fixable.
func rewrite(src *Source, file, text string) (string, []spanProblem) {
	spans, malformed := Spans(text)
	var probs []spanProblem
	for _, p := range malformed {
		p.File = file
		probs = append(probs, spanProblem{Problem: p})
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		old := text[sp.Start:sp.End]
		b.WriteString(text[last:sp.Start])
		last = sp.End
		v, err := src.Value(sp.Key)
		if err != nil {
			msg := err.Error()
			if errors.Is(err, ErrNoFigure) {
				msg = fmt.Sprintf("fig:%s: no figure has this key (internal/repotools/figures lists them: go run ./internal/repotools/figures/cmd/figures -list)", sp.Key)
			}
			probs = append(probs, spanProblem{Problem: Problem{File: file, Line: sp.Line, Msg: msg}})
			b.WriteString(old)
			continue
		}
		if !v.Matches(old) {
			from := strings.Join(src.figs[sp.Key].From, ", ")
			if from == "" {
				from = "the repository"
			}
			probs = append(probs, spanProblem{fixable: true, Problem: Problem{File: file, Line: sp.Line, Msg: fmt.Sprintf(
				"fig:%s says %s; %s gives %s (tolerance %s); make figures rewrites it",
				sp.Key, quoteDiff(old, v.Text), from, quoteDiff(v.Text, old), v.Tolerance())}})
		}
		b.WriteString(replaceSpan(old, v.Text))
	}
	b.WriteString(text[last:])
	return b.String(), probs
}

// quoteDiff quotes a's first line that b lacks (a whole one-line text),
// so that a table's message names the row that changed.
func quoteDiff(a, b string) string {
	al := strings.Split(strings.TrimSpace(a), "\n")
	if len(al) == 1 {
		return fmt.Sprintf("%q", strings.TrimSpace(a))
	}
	bl := strings.Split(strings.TrimSpace(b), "\n")
	for i, l := range al {
		if i >= len(bl) || strings.TrimSpace(l) != strings.TrimSpace(bl[i]) {
			return fmt.Sprintf("%q (line %d of the span)", strings.TrimSpace(l), i+1)
		}
	}
	return fmt.Sprintf("%d lines", len(al))
}

// Unused are the figure keys no marked span among files names: a figure
// nothing quotes should go.
func Unused(fsys fs.FS, files []string) ([]string, error) {
	used := map[string]bool{}
	for _, f := range markdown(fsys, files) {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		spans, _ := Spans(string(data))
		for _, sp := range spans {
			used[sp.Key] = true
		}
	}
	var out []string
	for _, f := range All() {
		if !used[f.Key] {
			out = append(out, f.Key)
		}
	}
	return out, nil
}

// markdown are the markdown files among files that fsys has.
func markdown(fsys fs.FS, files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		if st, err := fs.Stat(fsys, f); err != nil || st.IsDir() {
			continue // deleted in the work tree
		}
		out = append(out, f)
	}
	return out
}

// resultsFiles are the files of ResultsDir, the index aside, by name.
func resultsFiles(fsys fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(fsys, ResultsDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && e.Name() != path.Base(IndexFile) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// citations maps each results file to the markdown files that cite it:
// a link or an image that resolves to it, or a marked span of a figure
// computed from it. The index itself does not count.
func (s *Source) citations() (map[string][]string, error) {
	cites := map[string][]string{}
	add := func(result, doc string) {
		if !slices.Contains(cites[result], doc) {
			cites[result] = append(cites[result], doc)
		}
	}
	for _, f := range markdown(s.fsys, s.files) {
		if f == IndexFile {
			continue
		}
		data, err := fs.ReadFile(s.fsys, f)
		if err != nil {
			return nil, err
		}
		text := string(data)
		for _, l := range docscheck.Links(text) {
			p, _, _ := strings.Cut(l.Dest, "#")
			if up, err := url.PathUnescape(p); err == nil {
				p = up
			}
			if p == "" || strings.Contains(p, ":") {
				continue
			}
			if t, ok := docscheck.Resolve(f, p); ok && path.Dir(t) == ResultsDir {
				add(path.Base(t), f)
			}
		}
		spans, _ := Spans(text)
		for _, sp := range spans {
			for _, from := range s.figs[sp.Key].From {
				add(from, f)
			}
		}
	}
	return cites, nil
}

func indexFigures() []Figure {
	return []Figure{{
		Key:  "index.citations",
		What: "the results index's table: every file of docs/results and the docs that cite it (link or figure)",
		Get: func(s *Source) (Value, error) {
			files, err := resultsFiles(s.fsys)
			if err != nil {
				return Value{}, err
			}
			cites, err := s.citations()
			if err != nil {
				return Value{}, err
			}
			var b strings.Builder
			b.WriteString("| file | cited by |\n|---|---|")
			for _, f := range files {
				docs := slices.Sorted(slices.Values(cites[f]))
				var links []string
				for _, d := range docs {
					rel := relPath(path.Dir(IndexFile), d)
					links = append(links, fmt.Sprintf("[%s](%s)", d, rel))
				}
				cited := "–"
				if len(links) > 0 {
					cited = strings.Join(links, ", ")
				}
				fmt.Fprintf(&b, "\n| [`%s`](%s) | %s |", f, f, cited)
			}
			return Text(b.String()), nil
		},
	}}
}

// relPath is the path from directory dir to file, both slash paths from
// the root.
func relPath(dir, file string) string {
	d := strings.Split(dir, "/")
	f := strings.Split(file, "/")
	i := 0
	for i < len(d) && i < len(f)-1 && d[i] == f[i] {
		i++
	}
	return strings.Repeat("../", len(d)-i) + strings.Join(f[i:], "/")
}

// indexFileRE matches a results file named in backticks.
var indexFileRE = regexp.MustCompile("`([a-z0-9][a-z0-9.-]*\\.(?:md|json|png))`")

// indexProblems checks that the results index's first table (the files
// and the targets that write them) names every file of ResultsDir in its
// first column, and nothing that is not there.
func indexProblems(fsys fs.FS) ([]Problem, error) {
	data, err := fs.ReadFile(fsys, IndexFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	files, err := resultsFiles(fsys)
	if err != nil {
		return nil, err
	}
	tables := parseTables(string(data))
	if len(tables) == 0 {
		return []Problem{{File: IndexFile, Msg: "has no table of the results files"}}, nil
	}
	named := map[string]bool{}
	for _, r := range tables[0].Rows {
		// cells() dropped the backticks; match names in the raw words.
		for _, w := range strings.FieldsFunc(r[0], func(c rune) bool { return c == ',' || c == ' ' }) {
			if indexFileRE.MatchString("`" + w + "`") {
				named[w] = true
			}
		}
	}
	var out []Problem
	for _, f := range files {
		if !named[f] {
			out = append(out, Problem{File: IndexFile, Msg: fmt.Sprintf("%s/%s is not in the index's first table: add the target that writes it", ResultsDir, f)})
		}
	}
	for f := range named {
		if !slices.Contains(files, f) {
			out = append(out, Problem{File: IndexFile, Msg: fmt.Sprintf("the index lists %s, which %s does not have", f, ResultsDir)})
		}
	}
	slices.SortFunc(out, func(a, b Problem) int { return strings.Compare(a.Msg, b.Msg) })
	return out, nil
}
