package figures

import (
	"strings"
	"testing"
)

func TestSpans(t *testing.T) {
	for _, tc := range []struct {
		name     string
		text     string
		keys     []string // the spans' keys, in order
		texts    []string // their text
		problems []string // substrings, one per problem
	}{
		{"none", "no figures here", nil, nil, nil},
		{"one inline", "at <!-- fig:a.b -->0.46<!-- /fig -->× it", []string{"a.b"}, []string{"0.46"}, nil},
		{"two on a line", "<!-- fig:x -->1<!-- /fig --> and <!-- fig:y -->2<!-- /fig -->", []string{"x", "y"}, []string{"1", "2"}, nil},
		{"a block", "intro\n<!-- fig:t -->\n| a |\n|---|\n<!-- /fig -->\nafter", []string{"t"}, []string{"\n| a |\n|---|\n"}, nil},
		{"empty", "<!-- fig:e --><!-- /fig -->", []string{"e"}, []string{""}, nil},
		{"never closed", "<!-- fig:a -->1", nil, nil, []string{"fig:a is never closed"}},
		{"closed twice", "<!-- fig:a -->1<!-- /fig --><!-- /fig -->", []string{"a"}, []string{"1"}, []string{"no opening marker"}},
		{"a stray close first", "<!-- /fig --> then <!-- fig:a -->1<!-- /fig -->", []string{"a"}, []string{"1"}, []string{"no opening marker"}},
		{"nested", "<!-- fig:a -->1 <!-- fig:b -->2<!-- /fig -->", nil, nil, []string{"spans do not nest"}},
		{"not a marker", "an HTML comment `fig:KEY` before it, `/fig` after", nil, nil, nil},
	} {
		spans, problems := Spans(tc.text)
		if len(spans) != len(tc.keys) {
			t.Errorf("%s: %d spans, want %d (%v)", tc.name, len(spans), len(tc.keys), spans)
			continue
		}
		for i, sp := range spans {
			if sp.Key != tc.keys[i] || tc.text[sp.Start:sp.End] != tc.texts[i] {
				t.Errorf("%s: span %d is %s %q, want %s %q", tc.name, i, sp.Key, tc.text[sp.Start:sp.End], tc.keys[i], tc.texts[i])
			}
		}
		if len(problems) != len(tc.problems) {
			t.Errorf("%s: problems %v, want %d", tc.name, problems, len(tc.problems))
			continue
		}
		for i, p := range problems {
			if !strings.Contains(p.Msg, tc.problems[i]) {
				t.Errorf("%s: problem %q, want one with %q", tc.name, p.Msg, tc.problems[i])
			}
		}
	}
}

func TestSpanLines(t *testing.T) {
	spans, _ := Spans("a\nb <!-- fig:x -->1<!-- /fig -->\n\n<!-- fig:y -->\n2\n<!-- /fig -->")
	if len(spans) != 2 || spans[0].Line != 2 || spans[1].Line != 4 {
		t.Errorf("spans %+v, want lines 2 and 4", spans)
	}
}

func TestReplaceSpan(t *testing.T) {
	for _, tc := range []struct{ old, text, want string }{
		{"0.46", "0.47", "0.47"},
		{"", "0.47", "0.47"},
		{"\n", "| a |", "\n| a |\n"},
		{"\n| old |\n", "| a |", "\n| a |\n"},
		{"\n| old |", "| a |", "\n| a |\n"}, // a block span closes on its own line
		{" 1 ", "2", " 2 "},
	} {
		if got := replaceSpan(tc.old, tc.text); got != tc.want {
			t.Errorf("replaceSpan(%q, %q) = %q, want %q", tc.old, tc.text, got, tc.want)
		}
	}
}
