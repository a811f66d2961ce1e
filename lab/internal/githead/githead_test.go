package githead

import (
	"regexp"
	"testing"
)

func TestHeadAbbreviates(t *testing.T) {
	for _, tc := range []struct {
		abbrev int
		want   *regexp.Regexp
	}{
		{0, regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)},
		{12, regexp.MustCompile(`^[0-9a-f]{12}$`)},
	} {
		c, _ := Head(tc.abbrev)
		if c == "unknown" {
			t.Skip("not in a git work tree")
		}
		if !tc.want.MatchString(c) {
			t.Errorf("Head(%d) = %q, want %v", tc.abbrev, c, tc.want)
		}
	}
}
