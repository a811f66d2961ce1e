package figures

import (
	"os"
	"testing"

	"github.com/freshcache/freshcache/internal/repotools/docscheck"
	"github.com/freshcache/freshcache/internal/repotools/repotest"
)

// TestRepository checks this repository's marked figures against its
// docs/results, the results index against the directory, and that every
// figure key is quoted somewhere. make verify runs it
// (FRESHCACHE_VERIFY_DOCS=1); a plain go test skips it, as docscheck's
// does.
func TestRepository(t *testing.T) {
	root := repotest.Root(t, "figures")
	files, err := docscheck.TrackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(root)
	src := NewSource(fsys, files)
	for _, f := range All() {
		if _, err := src.Value(f.Key); err != nil {
			t.Errorf("the results cannot give %v", err)
		}
	}
	problems, err := Check(fsys, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	unused, err := Unused(fsys, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range unused {
		t.Errorf("fig:%s is marked in no doc: quote it or remove it from internal/repotools/figures", k)
	}
	if len(problems) > 0 {
		t.Log("make figures rewrites the marked figures from docs/results; internal/repotools/figures/doc.go has the rules")
	}
}
