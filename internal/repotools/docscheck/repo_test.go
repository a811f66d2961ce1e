package docscheck

import (
	"os"
	"testing"

	"github.com/freshcache/freshcache/internal/repotools/repotest"
)

// TestRepository checks this repository's tracked files. make verify runs
// it (FRESHCACHE_VERIFY_DOCS=1); a plain go test skips it, so that the
// rules hold the docs at verify time and not in every test run.
func TestRepository(t *testing.T) {
	root := repotest.Root(t, "docs")
	files, err := TrackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(os.DirFS(root), files)
	if err != nil {
		t.Fatal(err)
	}
	repotest.Report(t, problems, "internal/repotools/docscheck/doc.go says what each rule wants")
}
