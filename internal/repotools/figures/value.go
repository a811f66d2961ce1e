package figures

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Value is what the results say a figure is: Text as the docs print it,
// and Nums, the exact value behind every number in Text, in order. The
// constructors keep the two in step: Text has exactly len(Nums) numbers
// as Numbers reads them.
type Value struct {
	Text string
	Nums []Num
}

// Num is one number of a Value: the exact figure from the results and how
// far a printed figure may be from it (half a unit of the last digit the
// rendering prints, or 0 for counts, dates and hashes).
type Num struct {
	Exact, Tol float64
}

// numRE matches a number as the docs print one: digits with optional
// thousands commas ("12,336") and an optional fraction ("0.46").
var numRE = regexp.MustCompile(`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`)

// Numbers returns the numbers in s in order, thousands commas removed.
func Numbers(s string) []float64 {
	var out []float64
	for _, m := range numRE.FindAllString(s, -1) {
		f, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
		if err != nil {
			continue // cannot happen: numRE matches only digits, commas and a dot
		}
		out = append(out, f)
	}
	return out
}

// skeleton is s with every number replaced by "#" and runs of white space
// by one space: what must be equal for two texts to say the same thing
// with the same words.
func skeleton(s string) string {
	return strings.Join(strings.Fields(numRE.ReplaceAllString(s, "#")), " ")
}

// Matches reports whether text says what v says: the same words (white
// space aside), and each number within its tolerance of the exact value.
func (v Value) Matches(text string) bool {
	if strings.Join(strings.Fields(text), " ") == strings.Join(strings.Fields(v.Text), " ") {
		return true
	}
	if skeleton(text) != skeleton(v.Text) {
		return false
	}
	got := Numbers(text)
	if len(got) != len(v.Nums) {
		return false
	}
	for i, n := range v.Nums {
		if math.Abs(got[i]-n.Exact) > n.Tol+1e-9*math.Max(1, math.Abs(n.Exact)) {
			return false
		}
	}
	return true
}

// Tolerance describes the tolerances of v's numbers, for messages and
// listings: "±0.005", "±0.005, ±0.5", or "exact".
func (v Value) Tolerance() string {
	var parts []string
	for _, n := range v.Nums {
		s := "exact"
		if n.Tol > 0 {
			s = "±" + strconv.FormatFloat(n.Tol, 'f', -1, 64)
		}
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "exact"
	}
	return strings.Join(parts, ", ")
}

// F renders x with prec decimals, thousands separated by commas.
func F(x float64, prec int) Value {
	return Value{Text: formatNum(x, prec), Nums: []Num{{x, halfUnit(prec)}}}
}

// Count renders an integer count: exact, no tolerance.
func Count(n int) Value {
	return Value{Text: formatNum(float64(n), 0), Nums: []Num{{float64(n), 0}}}
}

// Pct renders a share (0.051 is 5.1%) as a percentage with two
// significant digits, without the sign: "0", "3.1", "18", "34".
func Pct(share float64) Value {
	p := 100 * share
	switch {
	case formatNum(p, 1) == "0.0":
		return Value{Text: "0", Nums: []Num{{p, 0.05}}}
	case p < 9.95:
		return F(p, 1)
	}
	return F(p, 0)
}

// Range renders the smallest and the largest of xs with prec decimals,
// joined by an en dash ("0.68–0.76"), or one figure when both print the
// same.
func Range(xs []float64, prec int) Value {
	return RangeOf(xs, func(x float64) Value { return F(x, prec) })
}

// RangeOf is Range with each end rendered by render (Pct, say).
func RangeOf(xs []float64, render func(float64) Value) Value {
	if len(xs) == 0 {
		return Value{Text: "–"}
	}
	lo, hi := render(slices.Min(xs)), render(slices.Max(xs))
	if lo.Text == hi.Text {
		return lo
	}
	return Join(lo, "–", hi)
}

// Text is literal text; the numbers in it, if any, are exact.
func Text(s string) Value {
	v := Value{Text: s}
	for _, n := range Numbers(s) {
		v.Nums = append(v.Nums, Num{n, 0})
	}
	return v
}

// Join concatenates Values and strings (taken as Text) into one Value.
func Join(parts ...any) Value {
	var v Value
	for _, p := range parts {
		var q Value
		switch p := p.(type) {
		case Value:
			q = p
		case string:
			q = Text(p)
		default:
			panic(fmt.Sprintf("figures.Join: %T is neither a Value nor a string", p))
		}
		v.Text += q.Text
		v.Nums = append(v.Nums, q.Nums...)
	}
	return v
}

// List joins values with sep ("0.99, 1.08, 1.01").
func List(sep string, vs ...Value) Value {
	var parts []any
	for i, v := range vs {
		if i > 0 {
			parts = append(parts, sep)
		}
		parts = append(parts, v)
	}
	return Join(parts...)
}

var words = []string{"none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}

// Word spells a small count ("three"), or prints it when it is larger
// than twelve. A spelt count has no number, so it must match exactly.
func Word(n int) Value {
	if n >= 0 && n < len(words) {
		return Value{Text: words[n]}
	}
	return Count(n)
}

// Capitalized is v with its first letter upper case, for a sentence's
// first word.
func Capitalized(v Value) Value {
	if v.Text != "" {
		v.Text = strings.ToUpper(v.Text[:1]) + v.Text[1:]
	}
	return v
}

func halfUnit(prec int) float64 { return 0.5 * math.Pow10(-prec) }

// formatNum prints x with prec decimals and commas between thousands of
// its integer part.
func formatNum(x float64, prec int) string {
	s := strconv.FormatFloat(x, 'f', prec, 64)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return sign + b.String()
}
