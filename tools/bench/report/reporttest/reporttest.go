package reporttest

import (
	"image/png"
	"io"
	"os"
	"strings"
	"testing"
)

// CheckPNGs fails t for each path that is not a PNG.
func CheckPNGs(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.DecodeConfig(f); err != nil {
			t.Errorf("%s is not a PNG: %v", p, err)
		}
		_ = f.Close()
	}
}

// CheckContains fails t for each of wants that text lacks, naming what text
// is ("markdown", "the report") and showing it.
func CheckContains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

// Render returns what write writes; an error from it stops the test.
func Render(t *testing.T, write func(w io.Writer) error) string {
	t.Helper()
	var b strings.Builder
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
