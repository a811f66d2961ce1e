package makehelp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepository checks the repository's Makefile, and that `make help`
// prints every .PHONY target. make verify runs it
// (FRESHCACHE_VERIFY_DOCS=1); a plain go test skips it.
func TestRepository(t *testing.T) {
	if os.Getenv("FRESHCACHE_VERIFY_DOCS") == "" {
		t.Skip("set FRESHCACHE_VERIFY_DOCS=1 (make verify) to check the repository's Makefile")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(b)
	for _, p := range Check(makefile) {
		t.Error(p)
	}

	// The recipe itself: its output must name every .PHONY target.
	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	printed := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			printed[f[0]] = true
		}
	}
	for _, p := range Phony(makefile) {
		if !printed[p.Name] {
			t.Errorf("Makefile:%d: make help does not print %s", p.Line, p.Name)
		}
	}
}
