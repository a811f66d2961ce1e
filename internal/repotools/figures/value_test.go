package figures

import (
	"slices"
	"testing"
)

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []float64
	}{
		{"5,038", []float64{5038}},
		{"0.30, 0.46, 0.50", []float64{0.30, 0.46, 0.50}},
		{"0.68–0.76", []float64{0.68, 0.76}},
		{"12,336 / 12,343", []float64{12336, 12343}},
		{"3 of 3", []float64{3, 3}},
		{"1,2", []float64{1, 2}}, // not a thousands separator
		{"`40981ff`", []float64{40981}},
		{"none", nil},
	} {
		if got := Numbers(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Numbers(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Value
		want string
	}{
		{"integer with commas", F(5037.8, 0), "5,038"},
		{"small integer", F(777.3, 0), "777"},
		{"millions", F(4592920, 0), "4,592,920"},
		{"two decimals", F(0.4612, 2), "0.46"},
		{"decimals keep commas", F(12345.678, 1), "12,345.7"},
		{"percentage under 10", Pct(0.04462), "4.5"},
		{"percentage over 10", Pct(0.3410), "34"},
		{"percentage at 10", Pct(0.0996), "10"},
		{"zero percent", Pct(0), "0"},
		{"range", Range([]float64{0.76, 0.68, 0.69}, 2), "0.68–0.76"},
		{"range that rounds to one figure", Range([]float64{17.01, 16.99}, 0), "17"},
		{"empty range", Range(nil, 2), "–"},
		{"percentage range", RangeOf([]float64{0, 0.031, 0.132}, Pct), "0–13"},
		{"word", Word(3), "three"},
		{"large count", Word(13), "13"},
		{"capitalized", Capitalized(Word(2)), "Two"},
		{"join", Join(Count(3), " of ", Count(3)), "3 of 3"},
		{"list", List(", ", F(0.99, 2), F(1.08, 2)), "0.99, 1.08"},
	} {
		if tc.v.Text != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.v.Text, tc.want)
		}
		if n := len(Numbers(tc.v.Text)); n != len(tc.v.Nums) {
			t.Errorf("%s: %q has %d numbers but %d exact values", tc.name, tc.v.Text, n, len(tc.v.Nums))
		}
	}
}

func TestMatches(t *testing.T) {
	ratio := F(0.4612, 2)                       // "0.46", ±0.005
	rng := Range([]float64{51.21, 68.93}, 0)    // "51–69", ±0.5
	verdict := Join(Count(3), " of ", Count(3)) // exact
	thousands := Value{Text: "29,000", Nums: []Num{{28838, 500}}}
	for _, tc := range []struct {
		name string
		v    Value
		text string
		want bool
	}{
		{"the rendering", ratio, "0.46", true},
		{"more digits, within tolerance", ratio, "0.461", true},
		{"rounded the other way", ratio, "0.47", false},
		{"a range", rng, "51–69", true},
		{"the range the reviewer found wrong", rng, "55–69", false},
		{"a hyphen for an en dash", rng, "51-69", false},
		{"white space", verdict, "3  of\n3", true},
		{"another count", verdict, "2 of 3", false},
		{"other words", verdict, "3 in 3", false},
		{"one number too many", ratio, "0.46 0.46", false},
		{"to the thousand", thousands, "29,000", true},
		{"too far", thousands, "28,000", false},
		{"text only", Text("met"), "missed", false},
		{"a commit", Text("`40981ff`"), "`40981fe`", false},
	} {
		if got := tc.v.Matches(tc.text); got != tc.want {
			t.Errorf("%s: %q.Matches(%q) = %v, want %v", tc.name, tc.v.Text, tc.text, got, tc.want)
		}
	}
}

func TestTolerance(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{F(0.46, 2), "±0.005"},
		{Range([]float64{1, 2000}, 0), "±0.5"},
		{Text("`40981ff`"), "exact"},
		{Word(3), "exact"},
		{Join(Count(3), " ms, ", F(0.5, 1)), "exact, ±0.05"},
	} {
		if got := tc.v.Tolerance(); got != tc.want {
			t.Errorf("%q.Tolerance() = %q, want %q", tc.v.Text, got, tc.want)
		}
	}
}
