package figures

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// ResultsDir is where the benchmark and test runs write their results,
// relative to the repository root.
const ResultsDir = "docs/results"

// IndexFile is the results index: every file of ResultsDir, the target
// that writes it and the docs that cite it.
const IndexFile = ResultsDir + "/README.md"

var (
	// ErrNoFigure is a marker naming a key no Figure has.
	ErrNoFigure = errors.New("figures: no such figure")
	// ErrNotInResults is a figure whose results file lacks what it reads
	// (a row, a table, a line): the file changed shape, or the figure
	// names the wrong thing.
	ErrNotInResults = errors.New("figures: not in the results")
)

// Source is what figures are computed from: the repository (results and,
// for the index, the docs that cite them). It reads each results file
// once. Not safe for concurrent use.
type Source struct {
	fsys  fs.FS
	files []string // tracked files, slash paths from the root
	figs  map[string]Figure
	cache map[string]any
}

// NewSource reads the repository at fsys. files are its tracked files
// (git ls-files); the results index's citations are computed over the
// markdown ones.
func NewSource(fsys fs.FS, files []string) *Source {
	figs := map[string]Figure{}
	for _, f := range All() {
		figs[f.Key] = f
	}
	return &Source{fsys: fsys, files: files, figs: figs, cache: map[string]any{}}
}

// Value computes the figure key from the results.
func (s *Source) Value(key string) (Value, error) {
	f, ok := s.figs[key]
	if !ok {
		return Value{}, fmt.Errorf("%w: %q", ErrNoFigure, key)
	}
	if v, ok := s.cache["fig:"+key].(Value); ok {
		return v, nil
	}
	v, err := f.Get(s)
	if err != nil {
		return Value{}, fmt.Errorf("fig:%s (from %s): %w", key, strings.Join(f.From, ", "), err)
	}
	if n := len(Numbers(v.Text)); n != len(v.Nums) {
		return Value{}, fmt.Errorf("fig:%s renders %q with %d numbers but carries %d exact values (a bug in its Get)", key, v.Text, n, len(v.Nums))
	}
	s.cache["fig:"+key] = v
	return v, nil
}

// text returns the results file name (a base name in ResultsDir).
func (s *Source) text(name string) (string, error) {
	if t, ok := s.cache["text:"+name].(string); ok {
		return t, nil
	}
	data, err := fs.ReadFile(s.fsys, path.Join(ResultsDir, name))
	if err != nil {
		return "", err
	}
	s.cache["text:"+name] = string(data)
	return string(data), nil
}

// loadJSON decodes the JSON results file name into a T, once per Source.
func loadJSON[T any](s *Source, name string) (*T, error) {
	if v, ok := s.cache["json:"+name].(*T); ok {
		return v, nil
	}
	t, err := s.text(name)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal([]byte(t), v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.cache["json:"+name] = v
	return v, nil
}

// mdTable is one table of a markdown results file, cells trimmed, with
// ** and ` removed.
type mdTable struct {
	Heading string // the nearest heading above it
	Header  []string
	Rows    [][]string
}

// col is the index of the first header cell that contains name, or -1.
func (t mdTable) col(name string) int {
	for i, h := range t.Header {
		if strings.Contains(h, name) {
			return i
		}
	}
	return -1
}

// rowsWhere are the rows whose first cell contains first.
func (t mdTable) rowsWhere(first string) [][]string {
	var out [][]string
	for _, r := range t.Rows {
		if len(r) > 0 && strings.Contains(r[0], first) {
			out = append(out, r)
		}
	}
	return out
}

var headingRE = regexp.MustCompile(`^#{1,6}\s+(.*)$`)

// tables parses the tables of the markdown results file name.
func (s *Source) tables(name string) ([]mdTable, error) {
	if t, ok := s.cache["tables:"+name].([]mdTable); ok {
		return t, nil
	}
	text, err := s.text(name)
	if err != nil {
		return nil, err
	}
	tables := parseTables(text)
	s.cache["tables:"+name] = tables
	return tables, nil
}

// table is the first table of name under a heading that contains heading
// and whose header contains every one of cols.
func (s *Source) table(name, heading string, cols ...string) (mdTable, error) {
	tables, err := s.tables(name)
	if err != nil {
		return mdTable{}, err
	}
next:
	for _, t := range tables {
		if !strings.Contains(t.Heading, heading) {
			continue
		}
		for _, c := range cols {
			if t.col(c) < 0 {
				continue next
			}
		}
		return t, nil
	}
	return mdTable{}, fmt.Errorf("%w: %s has no table under a heading with %q and columns %q", ErrNotInResults, name, heading, cols)
}

func parseTables(text string) []mdTable {
	var out []mdTable
	heading := ""
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := headingRE.FindStringSubmatch(l); m != nil {
			heading = m[1]
			continue
		}
		if !strings.HasPrefix(l, "|") || i+1 >= len(lines) || !isDelimiterRow(lines[i+1]) {
			continue
		}
		t := mdTable{Heading: heading, Header: cells(l)}
		i += 2
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			t.Rows = append(t.Rows, cells(strings.TrimSpace(lines[i])))
		}
		out = append(out, t)
	}
	return out
}

func isDelimiterRow(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "|") && strings.Trim(l, "|-: \t") == ""
}

// cells splits a table row on the pipes that are not escaped (\|).
func cells(row string) []string {
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var out []string
	var b strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			b.WriteByte('|')
			i++
		case row[i] == '|':
			out = append(out, cleanCell(b.String()))
			b.Reset()
		default:
			b.WriteByte(row[i])
		}
	}
	return append(out, cleanCell(b.String()))
}

func cleanCell(c string) string {
	return strings.TrimSpace(strings.NewReplacer("**", "", "`", "").Replace(c))
}
