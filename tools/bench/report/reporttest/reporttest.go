package reporttest

import (
	"image/png"
	"os"
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
