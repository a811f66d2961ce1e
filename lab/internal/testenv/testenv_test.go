package testenv

import "testing"

func TestRead(t *testing.T) {
	t.Setenv("TESTENV_SET", "/x")
	t.Setenv("TESTENV_EMPTY", "")
	if got := Skip(t, "TESTENV_SET", "unused"); got != "/x" {
		t.Errorf("Skip = %q, want /x", got)
	}
	if got := Require(t, "TESTENV_SET", "unused"); got != "/x" {
		t.Errorf("Require = %q, want /x", got)
	}
	if got := DirOr(t, "TESTENV_SET"); got != "/x" {
		t.Errorf("DirOr = %q, want /x", got)
	}
	if got := DirOr(t, "TESTENV_EMPTY"); got == "" {
		t.Error("DirOr of an empty variable gave no directory")
	}
}

func TestSkipSkipsWhenEmpty(t *testing.T) {
	t.Setenv("TESTENV_EMPTY", "")
	ran := false
	t.Run("inner", func(t *testing.T) {
		Skip(t, "TESTENV_EMPTY", "nothing to run on")
		ran = true
	})
	if ran {
		t.Fatal("Skip on an empty variable let the test go on")
	}
}
