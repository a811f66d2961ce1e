package errtest

import (
	"errors"
	"testing"
)

// recorder is a testing.TB that records whether Fatalf was called instead
// of stopping the goroutine, so that the checks' failures can be tested.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestChecks(t *testing.T) {
	a, b := errors.New("--a is bad"), errors.New("--b is bad")
	cases := []struct {
		name  string
		check func(testing.TB)
		fails bool
	}{
		{"Want none, got none", func(tb testing.TB) { Want(tb, "f", nil, "") }, false},
		{"Want none, got one", func(tb testing.TB) { Want(tb, "f", a, "") }, true},
		{"Want match", func(tb testing.TB) { Want(tb, "f", a, "--a") }, false},
		{"Want mismatch", func(tb testing.TB) { Want(tb, "f", a, "--b") }, true},
		{"Want missing", func(tb testing.TB) { Want(tb, "f", nil, "--a") }, true},
		{"WantOne none", func(tb testing.TB) { WantOne(tb, "f", nil, "") }, false},
		{"WantOne unwanted", func(tb testing.TB) { WantOne(tb, "f", []error{a}, "") }, true},
		{"WantOne match", func(tb testing.TB) { WantOne(tb, "f", []error{a}, "--a") }, false},
		{"WantOne two", func(tb testing.TB) { WantOne(tb, "f", []error{a, b}, "--a") }, true},
		{"WantFirst two", func(tb testing.TB) { WantFirst(tb, "f", []error{a, b}, "--a") }, false},
		{"WantFirst second only", func(tb testing.TB) { WantFirst(tb, "f", []error{a, b}, "--b") }, true},
		{"WantFirst none wanted one", func(tb testing.TB) { WantFirst(tb, "f", nil, "--a") }, true},
		{"WantFirst unwanted", func(tb testing.TB) { WantFirst(tb, "f", []error{a}, "") }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			tc.check(r)
			if r.failed != tc.fails {
				t.Fatalf("failed = %v, want %v", r.failed, tc.fails)
			}
		})
	}
}
