package testenv

import (
	"os"
	"testing"
)

// Skip returns the variable name, or skips t with why when it is empty:
// the test has nothing to run on.
func Skip(t testing.TB, name, why string) string {
	t.Helper()
	return get(t, name, why, t.Skip)
}

// Require returns the variable name, or fails t with why when it is empty:
// the test was asked to run but not told where its inputs are.
func Require(t testing.TB, name, why string) string {
	t.Helper()
	return get(t, name, why, t.Fatal)
}

// get returns the variable name, or stops t with why, by stop (t.Skip or
// t.Fatal), when it is empty.
func get(t testing.TB, name, why string, stop func(args ...any)) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		stop(why)
	}
	return v
}

// DirOr returns the directory the variable name names, or a temporary one
// that the test removes when it is empty.
func DirOr(t testing.TB, name string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	return t.TempDir()
}
