package docscheck

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRepository checks this repository's tracked files. make verify runs
// it (FRESHCACHE_VERIFY_DOCS=1); a plain go test skips it, so that the
// rules hold the docs at verify time and not in every test run.
func TestRepository(t *testing.T) {
	if os.Getenv("FRESHCACHE_VERIFY_DOCS") == "" {
		t.Skip("set FRESHCACHE_VERIFY_DOCS=1 (make verify) to check the repository's docs")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err := TrackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(os.DirFS(root), files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Log("internal/repotools/docscheck/doc.go says what each rule wants")
	}
}
