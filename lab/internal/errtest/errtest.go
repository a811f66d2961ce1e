package errtest

import (
	"strings"
	"testing"
)

// Want fails t unless err fits want: nil when want is "", otherwise an
// error whose text contains want. call names what returned err.
func Want(t testing.TB, call string, err error, want string) {
	t.Helper()
	check(t, call, err, err == nil, err != nil, err, want, "an error")
}

// WantOne is Want for a validator that returns every problem it finds:
// none when want is "", otherwise exactly one, containing want.
func WantOne(t testing.TB, call string, errs []error, want string) {
	t.Helper()
	check(t, call, errs, len(errs) == 0, len(errs) == 1, firstOf(errs), want, "one error")
}

// WantFirst is WantOne for a validator whose later problems may follow
// from the first: none when want is "", otherwise at least one, the first
// containing want.
func WantFirst(t testing.TB, call string, errs []error, want string) {
	t.Helper()
	check(t, call, errs, len(errs) == 0, len(errs) > 0, firstOf(errs), want, "the first error")
}

// check is the rule the three share. got is what call returned, as the
// message shows it; none says it returned no error; fits says it returned
// as many as the variant wants, and first is the one whose text must
// contain want; what names it in the message.
func check(t testing.TB, call string, got any, none, fits bool, first error, want, what string) {
	t.Helper()
	if want == "" {
		if !none {
			t.Fatalf("%s = %v, want no error", call, got)
		}
		return
	}
	if !fits || !strings.Contains(first.Error(), want) {
		t.Fatalf("%s = %v, want %s containing %q", call, got, what, want)
	}
}

func firstOf(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}
