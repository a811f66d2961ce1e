package docscheck

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Allowed are the files the text rules (tracker numbers, "shared/" paths,
// section citations) skip, with the reason. Their markdown links, if any,
// are still checked.
var Allowed = map[string]string{
	"lab/test/upstreame2e/tests.txt":             `upstream e2e test names, quoted as upstream spells them ("Pod Generation issue 500 podspec updates")`,
	"internal/repotools/docscheck/check.go":      "the checker's rules, with examples",
	"internal/repotools/docscheck/check_test.go": "the checker's own examples of what it reports",
	"internal/repotools/docscheck/doc.go":        "says what the checker reports, with examples",
}

// Problem is one finding: a file, a 1-based line (0 when unknown) and what
// is wrong.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
}

var (
	schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// trackerRE matches "issue 4", "Issues 4", "issue #4", "task 3",
	// "ISSUE4_SHAPE"; the digits end the match.
	trackerRE = regexp.MustCompile(`(?i)\b(?:issues?|tasks?)[ _-]?#?[0-9]+`)
	// upstreamRE is what may stand just before a tracker-like match that
	// names an upstream project's issue.
	upstreamRE = regexp.MustCompile(`(?i)\b(?:kubernetes|etcd)\s+$`)
	sharedRE   = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])shared/`)
	// citeRE matches `some/file.md, "Heading"`.
	citeRE = regexp.MustCompile(`([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md),[ \t]+"([^"\n]+)"`)
	// commentRE is a line break with the next line's comment marker, which
	// a citation may wrap across.
	commentRE = regexp.MustCompile(`\n[ \t]*(?://|#)?[ \t]*`)
)

// Check applies every rule to files (slash-separated paths relative to the
// root of fsys, e.g. the output of git ls-files) and returns the problems
// sorted by file and line. A listed file that fsys lacks is skipped.
func Check(fsys fs.FS, files []string) ([]Problem, error) {
	c := checker{fsys: fsys, anchors: map[string]map[string]bool{}}
	var out []Problem
	for _, f := range files {
		if st, err := fs.Stat(fsys, f); err != nil || st.IsDir() {
			continue // deleted in the work tree, or a submodule
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			continue // binary
		}
		text := string(data)
		if strings.HasSuffix(f, ".md") {
			out = append(out, c.links(f, text)...)
		}
		if limit, ok := WordLimits[f]; ok {
			out = append(out, WordLimitProblems(f, text, limit)...)
		}
		if _, ok := Allowed[f]; !ok {
			out = append(out, TextProblems(f, text)...)
			out = append(out, c.citations(f, text)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// TextProblems applies the rules that need no other file: no tracker
// numbers and no "shared/" paths.
func TextProblems(file, text string) []Problem {
	var out []Problem
	for i, l := range strings.Split(text, "\n") {
		for _, m := range trackerRE.FindAllStringIndex(l, -1) {
			if upstreamRE.MatchString(l[:m[0]]) {
				continue
			}
			out = append(out, Problem{file, i + 1, fmt.Sprintf("%q is a tracker's number: say what it is instead", l[m[0]:m[1]])})
		}
		if sharedRE.MatchString(l) {
			out = append(out, Problem{file, i + 1, `a path through "shared/", which is outside the repository`})
		}
	}
	return out
}

type checker struct {
	fsys    fs.FS
	anchors map[string]map[string]bool // markdown file -> its anchors
}

func (c *checker) anchorsOf(file string) (map[string]bool, error) {
	if a, ok := c.anchors[file]; ok {
		return a, nil
	}
	data, err := fs.ReadFile(c.fsys, file)
	if err != nil {
		return nil, err
	}
	a := Anchors(string(data))
	c.anchors[file] = a
	return a, nil
}

// links checks every link of the markdown file.
func (c *checker) links(file, text string) []Problem {
	var out []Problem
	for _, l := range Links(text) {
		if msg := c.checkLink(file, l.Dest); msg != "" {
			out = append(out, Problem{file, l.Line, msg})
		}
	}
	return out
}

// checkLink returns what is wrong with the link dest in file, or "".
func (c *checker) checkLink(file, dest string) string {
	if dest == "" || schemeRE.MatchString(dest) || strings.HasPrefix(dest, "//") {
		return ""
	}
	p, frag, _ := strings.Cut(dest, "#")
	if up, err := url.PathUnescape(p); err == nil {
		p = up
	}
	target := file
	if p != "" {
		var ok bool
		if target, ok = Resolve(file, p); !ok {
			return fmt.Sprintf("link %q leaves the repository", dest)
		}
		if _, err := fs.Stat(c.fsys, target); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", dest, target)
		}
	}
	if frag == "" || !strings.HasSuffix(target, ".md") {
		return ""
	}
	anchors, err := c.anchorsOf(target)
	if err != nil {
		return fmt.Sprintf("link %q: %v", dest, err)
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	if !anchors[strings.ToLower(frag)] && !anchors[frag] {
		return fmt.Sprintf("link %q: %s has no heading with anchor #%s", dest, target, frag)
	}
	return ""
}

// Resolve turns a relative link p in file into a path from the repository
// root ("/x" is the root's x, as on GitHub). ok is false when the result
// lies outside the repository.
func Resolve(file, p string) (target string, ok bool) {
	if strings.HasPrefix(p, "/") {
		target = path.Clean(strings.TrimLeft(p, "/"))
	} else {
		target = path.Clean(path.Join(path.Dir(file), p))
	}
	if target == ".." || strings.HasPrefix(target, "../") {
		return "", false
	}
	return target, true
}

// citations checks every `file.md, "Heading"` in text: the file must exist
// (relative to the citing file or the root) and have that heading.
func (c *checker) citations(file, text string) []Problem {
	var out []Problem
	joined := commentRE.ReplaceAllString(text, " ")
	for _, m := range citeRE.FindAllStringSubmatch(joined, -1) {
		cited, heading := m[1], m[2]
		target := ""
		for _, cand := range []string{path.Join(path.Dir(file), cited), cited} {
			if t, ok := Resolve(".", cand); ok {
				if _, err := fs.Stat(c.fsys, t); err == nil {
					target = t
					break
				}
			}
		}
		if target == "" {
			out = append(out, Problem{File: file, Msg: fmt.Sprintf("cites %s, %q: no such file in the repository", cited, heading)})
			continue
		}
		anchors, err := c.anchorsOf(target)
		if err != nil {
			out = append(out, Problem{File: file, Msg: err.Error()})
			continue
		}
		if !anchors[Slug(heading)] {
			out = append(out, Problem{File: file, Msg: fmt.Sprintf("cites %s, %q: %s has no such heading", cited, heading, target)})
		}
	}
	return out
}
