package docscheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Slug is the anchor GitHub gives a heading whose rendered text is text:
// lower case, each space a '-', and every character dropped that is not a
// letter, a mark, a digit, '_' (connector punctuation), '-' or a space.
// Spaces are not collapsed: "Upgrade / Downgrade" is "upgrade--downgrade".
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	fenceRE    = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	atxRE      = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*))?$`)
	closingRE  = regexp.MustCompile(`(?:^|[ \t]+)#+[ \t]*$`)
	setextRE   = regexp.MustCompile(`^ {0,3}(?:=+|-+)[ \t]*$`)
	blockRE    = regexp.MustCompile(`^ {0,3}(?:[-*+>|]|[0-9]+[.)])`)
	codeSpanRE = regexp.MustCompile("(`+)[^`]*?(`+)")
	imageRE    = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	tagRE      = regexp.MustCompile(`<[^>]*>`)
	htmlIDRE   = regexp.MustCompile(`(?i)<a[^>]*\s(?:name|id)="([^"]+)"`)
	refDefRE   = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:[ \t]+<?([^\s>]+)>?`)
	htmlRefRE  = regexp.MustCompile(`(?i)\s(?:href|src)="([^"]*)"`)
)

// line is one line of a markdown document outside fenced code, with its
// 1-based number.
type line struct {
	n    int
	text string
}

// prose returns the lines of md that are not inside fenced code blocks
// (the fences themselves excluded).
func prose(md string) []line {
	var out []line
	var fence string // the open fence's run of ` or ~, "" when outside
	for i, l := range strings.Split(md, "\n") {
		l = strings.TrimRight(l, "\r")
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			switch {
			case fence == "":
				fence = m[1]
				continue
			case m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), m[1][:1])) == "":
				fence = ""
				continue
			}
		}
		if fence == "" {
			out = append(out, line{n: i + 1, text: l})
		}
	}
	return out
}

// headingText is what GitHub renders of a heading's source: code spans
// without their backticks, links and images as their text, no HTML tags.
func headingText(src string) string {
	src = codeSpanRE.ReplaceAllStringFunc(src, func(s string) string { return strings.Trim(s, "`") })
	src = imageRE.ReplaceAllString(src, "$1")
	return tagRE.ReplaceAllString(src, "")
}

// Anchors returns the anchors of a markdown document: each heading's Slug
// (ATX and setext), with GitHub's "-1", "-2", ... for repeats, and the
// name or id of every HTML <a>.
func Anchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	add := func(text string) {
		s := Slug(headingText(text))
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			s += "-" + strconv.Itoa(n+1)
		} else {
			seen[s] = 0
		}
		anchors[s] = true
	}
	lines := prose(md)
	for i, l := range lines {
		for _, m := range htmlIDRE.FindAllStringSubmatch(l.text, -1) {
			anchors[m[1]] = true
		}
		if m := atxRE.FindStringSubmatch(l.text); m != nil {
			add(closingRE.ReplaceAllString(m[2], ""))
			continue
		}
		if setextRE.MatchString(l.text) && i > 0 && lines[i-1].n == l.n-1 {
			prev := lines[i-1].text
			if strings.TrimSpace(prev) != "" && !atxRE.MatchString(prev) && !setextRE.MatchString(prev) && !blockRE.MatchString(prev) && !strings.HasPrefix(prev, "    ") {
				add(prev)
			}
		}
	}
	return anchors
}

// Link is one link destination in a markdown document.
type Link struct {
	Line int
	Dest string
}

// Links returns the destinations of the inline links and images, the
// reference definitions and the HTML href/src attributes of a markdown
// document, outside fenced code and code spans, in order.
func Links(md string) []Link {
	var out []Link
	for _, l := range prose(md) {
		text := codeSpanRE.ReplaceAllStringFunc(l.text, func(s string) string { return strings.Repeat(" ", len(s)) })
		if m := refDefRE.FindStringSubmatch(text); m != nil {
			out = append(out, Link{Line: l.n, Dest: m[1]})
			continue
		}
		for i := 0; ; {
			j := strings.Index(text[i:], "](")
			if j < 0 {
				break
			}
			start := i + j + 2
			dest, end := inlineDest(text[start:])
			if dest != "" {
				out = append(out, Link{Line: l.n, Dest: dest})
			}
			i = start + end
		}
		for _, m := range htmlRefRE.FindAllStringSubmatch(text, -1) {
			out = append(out, Link{Line: l.n, Dest: m[1]})
		}
	}
	return out
}

// inlineDest parses the destination at the start of s, the text after
// "](": <...>, or up to whitespace or the ')' that balances. It returns the
// destination and how much of s it used.
func inlineDest(s string) (string, int) {
	s0 := len(s)
	s = strings.TrimLeft(s, " \t")
	skipped := s0 - len(s)
	if strings.HasPrefix(s, "<") {
		if k := strings.IndexByte(s, '>'); k > 0 {
			return s[1:k], skipped + k + 1
		}
		return "", skipped
	}
	depth := 0
	for k, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth == 0, r == ' ', r == '\t':
			return s[:k], skipped + k
		case r == ')':
			depth--
		}
	}
	return s, skipped + len(s)
}
