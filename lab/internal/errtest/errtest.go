package errtest

import (
	"strings"
	"testing"
)

// Want fails t unless err fits want: nil when want is "", otherwise an
// error whose text contains want. call names what returned err.
func Want(t testing.TB, call string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("%s = %v, want no error", call, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s = %v, want an error containing %q", call, err, want)
	}
}

// WantOne is Want for a validator that returns every problem it finds:
// none when want is "", otherwise exactly one, containing want.
func WantOne(t testing.TB, call string, errs []error, want string) {
	t.Helper()
	if want == "" {
		if len(errs) != 0 {
			t.Fatalf("%s = %v, want no error", call, errs)
		}
		return
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
		t.Fatalf("%s = %v, want one error containing %q", call, errs, want)
	}
}

// WantFirst is WantOne for a validator whose later problems may follow
// from the first: none when want is "", otherwise at least one, the first
// containing want.
func WantFirst(t testing.TB, call string, errs []error, want string) {
	t.Helper()
	if want == "" {
		if len(errs) != 0 {
			t.Fatalf("%s = %v, want no error", call, errs)
		}
		return
	}
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), want) {
		t.Fatalf("%s = %v, want the first error containing %q", call, errs, want)
	}
}
