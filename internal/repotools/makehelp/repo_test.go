package makehelp

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/freshcache/freshcache/internal/repotools/repotest"
)

// TestRepository checks the repository's Makefile, and that `make help`
// and `make help-all` print what Check read, so that together they name
// every .PHONY target once. make verify runs it (FRESHCACHE_VERIFY_DOCS=1);
// a plain go test skips it.
func TestRepository(t *testing.T) {
	root := repotest.Root(t, "Makefile")
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(b)
	for _, p := range Check(makefile) {
		t.Error(p)
	}

	// The recipes themselves: their target lines must be the ones Lines
	// renders from HelpRule's reading, and no line of theirs may be long.
	listed := Help(makefile)
	printed := map[string]int{}
	for _, all := range []bool{false, true} {
		target := map[bool]string{false: "help", true: "help-all"}[all]
		cmd := exec.Command("make", "--no-print-directory", "-s", target)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make %s: %v", target, err)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > MaxLine {
				t.Errorf("make %s prints a line of %d characters, more than %d: %q", target, n, MaxLine, l)
			}
			if strings.HasPrefix(l, "  ") {
				lines = append(lines, l)
				printed[strings.Fields(l)[0]]++
			}
		}
		if want := Lines(listed, all); !slices.Equal(lines, want) {
			t.Errorf("make %s prints\n%s\nbut HelpRule reads the Makefile as\n%s", target, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if !all && len(lines) > MaxEveryday {
			t.Errorf("make help lists %d targets, more than %d", len(lines), MaxEveryday)
		}
	}
	for _, p := range Phony(makefile) {
		if n := printed[p.Name]; n != 1 {
			t.Errorf("Makefile:%d: make help and make help-all print %s %d times, not once", p.Line, p.Name, n)
		}
	}
}
