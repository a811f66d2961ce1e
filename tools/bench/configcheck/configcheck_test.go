package configcheck

import (
	"errors"
	"strings"
	"testing"
)

var errTest = errors.New("test: bad configuration")

func TestProblemsWrapTheSentinel(t *testing.T) {
	p := New(errTest)
	if p.Err() != nil {
		t.Fatalf("an empty list: %v", p.Err())
	}
	p.Addf("--objects=%d: at least 1", 0)
	p.Addf("--clients=%d: at least 1", -1)
	err := p.Err()
	if !errors.Is(err, errTest) {
		t.Errorf("%v does not wrap the sentinel", err)
	}
	if want := "test: bad configuration: --objects=0: at least 1\ntest: bad configuration: --clients=-1: at least 1"; err.Error() != want {
		t.Errorf("Err() = %q, want %q", err, want)
	}
}

func TestProblemsWithoutSentinel(t *testing.T) {
	p := New(nil)
	p.Addf("--window: %v; must be more than 0", 0)
	if got, want := p.Err().Error(), "--window: 0; must be more than 0"; got != want {
		t.Errorf("Err() = %q, want %q", got, want)
	}
}

func TestNames(t *testing.T) {
	rule := NameRule{
		Known:   []string{"a", "b"},
		Empty:   "none; choose among a,b",
		Unknown: "unknown %q",
		Twice:   "%q twice",
	}
	for _, tc := range []struct {
		names []string
		rule  NameRule
		want  []string
	}{
		{[]string{"a", "b"}, rule, nil},
		{nil, rule, []string{"none; choose among a,b"}},
		{[]string{"a", "c"}, rule, []string{`unknown "c"`}},
		{[]string{"a", "a"}, rule, []string{`"a" twice`}},
		{[]string{"c", "c"}, rule, []string{`unknown "c"`, `unknown "c"`, `"c" twice`}},
		{[]string{"a", "a"}, NameRule{Known: rule.Known, Unknown: rule.Unknown}, nil},
	} {
		p := New(nil)
		p.Names(tc.names, tc.rule)
		var got []string
		if err := p.Err(); err != nil {
			got = strings.Split(err.Error(), "\n")
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Names(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}
