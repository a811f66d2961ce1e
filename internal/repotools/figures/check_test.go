package figures

import (
	"strings"
	"testing"
	"testing/fstest"
)

// repo is a small repository: one storage report, its index, and a
// README quoting it.
func repo(readme, index string) fstest.MapFS {
	return fstest.MapFS{
		"docs/results/storage-20k.json": {Data: []byte(`{"date": "2026-11-29T13:13:11Z", "git_commit": "40981ff3a1f4c8968590cdf608fa0250634500c0", "rows": [
			{"backend": "upstream", "scenario": "list-node", "rv": "\"\"", "concurrency": 32, "ops_per_sec": 777.3, "etcd_requests_per_op": 1.01},
			{"backend": "freshcache", "scenario": "list-node", "rv": "\"\"", "concurrency": 32, "ops_per_sec": 5037.8, "etcd_requests_per_op": 0.1021},
			{"backend": "freshcache", "scenario": "list-node", "rv": "\"\"", "concurrency": 4, "sweep": true, "load": {"lease_writes_per_sec": 50}, "ops_per_sec": 3336.6, "fresh_wait_p99_ms": 5.95}
		]}`)},
		"docs/results/storage-20k.md": {Data: []byte("# storage-20k\n")},
		"docs/results/README.md":      {Data: []byte(index)},
		"README.md":                   {Data: []byte(readme)},
	}
}

const goodIndex = "# Results\n\n| files | make target |\n|---|---|\n| `storage-20k.md`, `storage-20k.json` | `make bench-full` |\n"

func TestCheck(t *testing.T) {
	files := []string{"README.md", "docs/results/README.md", "docs/results/storage-20k.md", "docs/results/storage-20k.json"}
	for _, tc := range []struct {
		name   string
		readme string
		index  string
		wants  []string // substrings, one per problem, in order
	}{
		{"right", "LIST <!-- fig:storage-20k.list-node.freshcache.ops -->5,038<!-- /fig --> ops/s, <!-- fig:storage-20k.commit -->`40981ff`<!-- /fig -->\n", goodIndex, nil},
		{"rounded by hand within tolerance", "<!-- fig:storage-20k.list-node.fresh-vs-upstream -->6.48<!-- /fig -->\n", goodIndex, nil},
		{"typed wrong", "LIST\n<!-- fig:storage-20k.list-node.freshcache.ops -->5,830<!-- /fig -->\n", goodIndex,
			[]string{`README.md:2: fig:storage-20k.list-node.freshcache.ops says "5,830"; storage-20k.json gives "5,038" (tolerance ±0.5)`}},
		{"no such key", "<!-- fig:storage-20k.nothing -->1<!-- /fig -->\n", goodIndex, []string{"fig:storage-20k.nothing: no figure has this key"}},
		{"malformed", "<!-- fig:storage-20k.commit -->x\n", goodIndex, []string{"never closed"}},
		{"index misses a file", "", "# Results\n\n| files | make target |\n|---|---|\n| `storage-20k.md` | x |\n",
			[]string{"docs/results/storage-20k.json is not in the index's first table"}},
		{"index names a file not there", "", goodIndex + "| `gone.md` | y |\n", []string{"the index lists gone.md, which docs/results does not have"}},
	} {
		problems, err := Check(repo(tc.readme, tc.index), files)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(problems) != len(tc.wants) {
			t.Errorf("%s: problems %v, want %d", tc.name, problems, len(tc.wants))
			continue
		}
		for i, p := range problems {
			if !strings.Contains(p.String(), tc.wants[i]) {
				t.Errorf("%s: problem %q, want one with %q", tc.name, p.String(), tc.wants[i])
			}
		}
	}
}

func TestRewrite(t *testing.T) {
	fsys := repo("", goodIndex)
	src := NewSource(fsys, []string{"README.md"})
	in := "a <!-- fig:storage-20k.list-node.freshcache.ops -->5,830<!-- /fig --> b\n" +
		"<!-- fig:storage-20k.nothing -->keep<!-- /fig -->\n" +
		"<!-- fig:storage-20k.sweep.freshcache.wait-p99 -->\n?\n<!-- /fig -->\n"
	want := "a <!-- fig:storage-20k.list-node.freshcache.ops -->5,038<!-- /fig --> b\n" +
		"<!-- fig:storage-20k.nothing -->keep<!-- /fig -->\n" +
		"<!-- fig:storage-20k.sweep.freshcache.wait-p99 -->\n5.95\n<!-- /fig -->\n"
	out, problems := Rewrite(src, "README.md", in)
	if out != want {
		t.Errorf("Rewrite:\n%s\nwant\n%s", out, want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Msg, "no figure has this key") {
		t.Errorf("problems %v, want only the unknown key", problems)
	}
	if again, _ := Rewrite(src, "README.md", out); again != out {
		t.Errorf("a second rewrite changed the text:\n%s", again)
	}
}

func TestCitations(t *testing.T) {
	fsys := repo("See [it](docs/results/storage-20k.md) and <!-- fig:storage-20k.commit -->x<!-- /fig -->.\n", goodIndex+"\n<!-- fig:index.citations -->\n<!-- /fig -->\n")
	fsys["docs/kep.md"] = &fstest.MapFile{Data: []byte("![plot](results/storage-20k.md#top) [web](https://example.com/results/storage-20k.json)\n")}
	files := []string{"README.md", "docs/kep.md", "docs/results/README.md"}
	v, err := NewSource(fsys, files).Value("index.citations")
	if err != nil {
		t.Fatal(err)
	}
	want := "| file | cited by |\n|---|---|\n" +
		"| [`storage-20k.json`](storage-20k.json) | [README.md](../../README.md) |\n" +
		"| [`storage-20k.md`](storage-20k.md) | [README.md](../../README.md), [docs/kep.md](../kep.md) |"
	if v.Text != want {
		t.Errorf("index.citations:\n%s\nwant\n%s", v.Text, want)
	}
}

func TestUnused(t *testing.T) {
	fsys := repo("<!-- fig:storage-20k.commit -->x<!-- /fig -->", goodIndex)
	unused, err := Unused(fsys, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(unused) != len(All())-1 {
		t.Errorf("%d unused keys, want every key but one (%d)", len(unused), len(All())-1)
	}
	for _, k := range unused {
		if k == "storage-20k.commit" {
			t.Error("storage-20k.commit is marked but reported unused")
		}
	}
}

func TestRelPath(t *testing.T) {
	for _, tc := range []struct{ dir, file, want string }{
		{"docs/results", "README.md", "../../README.md"},
		{"docs/results", "docs/kep.md", "../kep.md"},
		{"docs/results", "docs/results/cluster.md", "cluster.md"},
		{"docs/results", "docs/investigations/x.md", "../investigations/x.md"},
	} {
		if got := relPath(tc.dir, tc.file); got != tc.want {
			t.Errorf("relPath(%q, %q) = %q, want %q", tc.dir, tc.file, got, tc.want)
		}
	}
}

func TestKeysAreUniqueAndDescribed(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range All() {
		if seen[f.Key] {
			t.Errorf("key %s is registered twice", f.Key)
		}
		seen[f.Key] = true
		if f.What == "" || f.Get == nil {
			t.Errorf("key %s lacks a description or a Get", f.Key)
		}
		if !openRE.MatchString("<!-- fig:" + f.Key + " -->") {
			t.Errorf("key %s cannot be written in a marker", f.Key)
		}
	}
}
