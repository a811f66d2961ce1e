package docscheck

import "testing"

// wordCase is one text, the limit it is checked against, the words wc -w
// counts in it, and whether the limit check must report it.
type wordCase struct {
	text         string
	limit, words int
	fails        bool
}

func TestWordLimitProblems(t *testing.T) {
	cases := map[string]wordCase{
		"empty":                                 {"", 3, 0, false},
		"under the limit":                       {"one two", 3, 2, false},
		"at the limit, any white space between": {"one  two\tthree\n", 3, 3, false},
		"over the limit: markup counts":         {"# KEP\n\none two three", 3, 5, true},
		"a figure marker counts as wc -w does":  {"at <!-- fig:x -->1<!-- /fig --> nodes", 6, 7, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Words(tc.text); got != tc.words {
				t.Errorf("Words(%q) = %d, want %d", tc.text, got, tc.words)
			}
			if got := WordLimitProblems("docs/kep.md", tc.text, tc.limit); (len(got) > 0) != tc.fails {
				t.Errorf("WordLimitProblems(%q, %d) = %v, want a problem: %v", tc.text, tc.limit, got, tc.fails)
			}
		})
	}
}
