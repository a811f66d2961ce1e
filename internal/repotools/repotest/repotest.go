package repotest

import (
	"os"
	"path/filepath"
	"testing"
)

// Root skips t unless FRESHCACHE_VERIFY_DOCS is set, saying that setting it
// checks the repository's what ("docs", "Makefile", ...), and returns the
// repository root, three levels above a package under internal/repotools.
func Root(t *testing.T, what string) string {
	t.Helper()
	if os.Getenv("FRESHCACHE_VERIFY_DOCS") == "" {
		t.Skip("set FRESHCACHE_VERIFY_DOCS=1 (make verify) to check the repository's " + what)
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Report fails t once per problem and, when there is any, logs hint: where
// to read what the rules want or how to fix them.
func Report[P any](t *testing.T, problems []P, hint string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Log(hint)
	}
}
