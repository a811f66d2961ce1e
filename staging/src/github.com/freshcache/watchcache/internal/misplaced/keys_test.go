package misplaced

import (
	"fmt"
	"testing"
)

func TestMisplacedKeysTouches(t *testing.T) {
	var m Keys
	if m.Touches("", "") {
		t.Fatal("an empty set touches everything")
	}
	m.Add("/pods/b/x", "/pods//", "/pods/b/x")
	cases := []struct {
		from, to string
		want     bool
	}{
		{"/pods/", "", true},
		{"/pods/", "/pods0", true},
		{"/pods/b/", "/pods/b0", true},
		{"/pods/b/x", "/pods/b/x\x00", true},
		{"/pods/b/y", "/pods/b/y\x00", false},
		{"/pods/a/", "/pods/a0", false},
		{"/pods/c/", "", false},
		{"/pods//", "/pods//\x00", true},
		{"/pods/b/", "/pods/b/x", false}, // the end is exclusive
	}
	for _, c := range cases {
		if got := m.Touches(c.from, c.to); got != c.want {
			t.Errorf("touches(%q, %q) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if !m.TouchesKey("/pods/b/x") || m.TouchesKey("/pods/b") {
		t.Error("touchesKey is not an exact match")
	}
	if n := m.n.Load(); n != 2 {
		t.Errorf("%d keys remembered, want 2 (duplicates collapse)", n)
	}
}

func TestMisplacedKeysOverflow(t *testing.T) {
	var m Keys
	for i := 0; i <= MaxKeys; i++ {
		m.Add(fmt.Sprintf("/pods/ns/%05d", i))
	}
	if !m.Touches("/other/", "/other0") {
		t.Fatal("past MaxKeys, a range without a remembered key is not delegated")
	}
}
