package docscheck

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		file, link, want string
		ok               bool
	}{
		{"docs/kep.md", "design.md", "docs/design.md", true},
		{"docs/results/README.md", "../investigations/x.md", "docs/investigations/x.md", true},
		{"README.md", "docs/results/", "docs/results", true},
		{"docs/a.md", "/Makefile", "Makefile", true},
		{"docs/a.md", "./b/../c.md", "docs/c.md", true},
		{"docs/architecture.md", "../../shared/design.md", "", false},
		{"README.md", "../x.md", "", false},
		{"docs/a.md", "..", ".", true},
	} {
		got, ok := Resolve(tc.file, tc.link)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q, %v", tc.file, tc.link, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTextProblems(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int // problems
	}{
		{"the consistent-read target shape", 0},
		{"issue 4's shape", 1},
		{"Issue 19 set four targets", 1},
		{"the storage-level targets of issues 4 and 5", 1},
		{"project issue #19", 1},
		{"ISSUE4_SHAPE := --pods=20000", 1},
		{"until task 3 is done; Task 12 too", 2},
		{"kubernetes#59848 and etcd-io/etcd#20229", 0},
		{"kubernetes issue 59848, etcd issue 15220", 0},
		{"each cache issues one fetch", 0},
		{"tissue 4, issued 3", 0},
		{"taskset -c 1", 0},
		{"see ../../shared/design.md", 1},
		{"shared/notes.txt", 1},
		{"internal/fanout/shared.go, sharedstate/", 0},
	} {
		if got := TextProblems("f", tc.text); len(got) != tc.want {
			t.Errorf("TextProblems(%q) = %v, want %d problem(s)", tc.text, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	repo := fstest.MapFS{
		"README.md":                      {Data: []byte("# freshcache\n## Running it\n")},
		"docs/design.md":                 {Data: []byte("# Design\n## The protocol\n## Why the revision request must be linearizable\n")},
		"docs/results/r.md":              {Data: []byte("# R\n")},
		"docs/img.png":                   {Data: []byte("\x89PNG\x00issue 4")},
		"pkg/x/doc.go":                   {Data: []byte("// See docs/design.md, \"The protocol\".\npackage x\n")},
		"lab/test/upstreame2e/tests.txt": {Data: []byte("Pod Generation issue 500 podspec updates\n")},
	}
	for _, tc := range []struct {
		name  string
		file  string
		text  string
		wants []string // substrings, one per problem, in order
	}{
		{"good links", "docs/kep.md",
			"[d](design.md) [p](design.md#the-protocol) [r](results/r.md) [dir](results/) [me](#kep) [root](/README.md#running-it) [web](https://github.com/x/y/issues/4) [m](mailto:a@b)\n# KEP\n",
			nil},
		{"a link out of the repository", "docs/architecture.md",
			"This page follows [`shared/design.md`](../../shared/design.md).\n",
			[]string{`leaves the repository`, `a path through "shared/"`}},
		{"a dangling link", "docs/a.md", "[x](nothere.md)\n", []string{"docs/nothere.md does not exist"}},
		{"a missing anchor in another file", "docs/a.md", "[x](design.md#the-wire-format)\n", []string{"has no heading with anchor #the-wire-format"}},
		{"a missing anchor in the same file", "docs/a.md", "# A\n[x](#b)\n", []string{"docs/a.md has no heading with anchor #b"}},
		{"an anchor on a file that is not markdown", "docs/a.md", "[x](../pkg/x/doc.go#L1)\n", nil},
		{"escaped path", "docs/a.md", "[x](results%2Fr.md)\n", nil},
		{"a tracker number", "docs/a.md", "At issue 4's shape.\n", []string{`"issue 4" is a tracker's number`}},
		{"a good citation, wrapped in a comment", "pkg/y/y.go",
			"// (docs/design.md, \"Why the revision request must be\n// linearizable\").\npackage y\n", nil},
		{"a citation relative to the citing file", "docs/b.md", "as design.md, \"The protocol\" says\n", nil},
		{"a citation of a heading that is gone", "pkg/y/y.go", "// docs/results/README.md, \"Issue 4\"\n",
			[]string{`cites docs/results/README.md, "Issue 4": no such file`, `"Issue 4" is a tracker's number`}},
		{"a citation of a missing heading", "pkg/y/y.go", "// docs/design.md, \"Correctness tests\"\n",
			[]string{`docs/design.md has no such heading`}},
		{"a bare design.md from code", "staging/w/doc.go", "// # Consistent reads (design.md, \"The protocol\")\n",
			[]string{"cites design.md, \"The protocol\": no such file"}},
		{"a KEP over its word limit", "docs/kep.md", strings.Repeat("word ", 6001),
			[]string{"docs/kep.md: 6001 words, more than the 6000 allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for k, v := range repo {
				fsys[k] = v
			}
			fsys[tc.file] = &fstest.MapFile{Data: []byte(tc.text)}
			files := []string{tc.file, "docs/img.png", "lab/test/upstreame2e/tests.txt", "deleted.md"}
			got, err := Check(fsys, files)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.wants) {
				t.Fatalf("got %d problem(s), want %d:\n%v", len(got), len(tc.wants), got)
			}
			for i, w := range tc.wants {
				if !strings.Contains(got[i].String(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	if got := (Problem{"a.md", 3, "bad"}).String(); got != "a.md:3: bad" {
		t.Errorf("got %q", got)
	}
	if got := (Problem{"a.go", 0, "bad"}).String(); got != "a.go: bad" {
		t.Errorf("got %q", got)
	}
}
