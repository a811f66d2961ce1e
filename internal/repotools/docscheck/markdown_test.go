package docscheck

import (
	"reflect"
	"sort"
	"testing"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"The protocol", "the-protocol"},
		{"Why the revision request must be linearizable", "why-the-revision-request-must-be-linearizable"},
		{"The driver (driver.go)", "the-driver-drivergo"},
		{"Upgrade / Downgrade Strategy", "upgrade--downgrade-strategy"},
		{"Real nodes (--real-nodes=1)", "real-nodes---real-nodes1"},
		{"Notes/Constraints/Caveats", "notesconstraintscaveats"},
		{"kubernetes#59848 with real kubelets", "kubernetes59848-with-real-kubelets"},
		{"Revisions from the apiserver's own writes (writes.go, gate RevisionsFromWrites)", "revisions-from-the-apiservers-own-writes-writesgo-gate-revisionsfromwrites"},
		{"Evidence (tests on real embedded etcd; no etcd mocks, no sleeps)", "evidence-tests-on-real-embedded-etcd-no-etcd-mocks-no-sleeps"},
		{"snake_case stays", "snake_case-stays"},
		{"  Trimmed  ", "trimmed"},
		{"Ünïcode × 3", "ünïcode--3"},
		{"1. Bring it up", "1-bring-it-up"},
	} {
		if got := Slug(tc.in); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestAnchors(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   string
		want []string
	}{
		{"atx levels and closing hashes", "# Title\n## Two ##\n###### Six\n####### not a heading\n", []string{"six", "title", "two"}},
		{"code span and link in a heading", "### The seam: `pkg/apiserver`\n## See [design](design.md)\n", []string{"see-design", "the-seam-pkgapiserver"}},
		{"repeats get numbers", "## Metrics\n## Metrics\n## Metrics\n", []string{"metrics", "metrics-1", "metrics-2"}},
		{"not inside fences", "# A\n```sh\n# not a heading\n```\n~~~\n# nor this\n~~~\n# B\n", []string{"a", "b"}},
		{"a longer fence is closed only by a long enough one", "````\n```\n# inside\n````\n# out\n", []string{"out"}},
		{"setext", "Title\n=====\n\nSub\n---\n", []string{"sub", "title"}},
		{"a rule after a blank line is no heading", "text\n\n---\n", nil},
		{"a table separator is no heading", "| a | b |\n|---|---|\n", nil},
		{"a list item is no setext heading", "- item\n---\n", nil},
		{"html anchors", `<a name="top"></a>` + "\n" + `<a id="x-1">x</a>` + "\n", []string{"top", "x-1"}},
		{"no space after hashes is no heading", "#hashtag\n", nil},
		{"indented four is code", "    # code\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keys(Anchors(tc.md)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Anchors = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   string
		want []Link
	}{
		{"inline and image", "see [a](a.md) and ![p](img/p.png \"title\")\n", []Link{{1, "a.md"}, {1, "img/p.png"}}},
		{"anchor only", "[up](#the-protocol)\n", []Link{{1, "#the-protocol"}}},
		{"angle brackets", "[s](<with space.md>)\n", []Link{{1, "with space.md"}}},
		{"balanced parentheses", "[w](https://en.wikipedia.org/wiki/Go_(language))\n", []Link{{1, "https://en.wikipedia.org/wiki/Go_(language)"}}},
		{"several on a line, line numbers", "x\n[a](a.md) [b](b.md#h)\n", []Link{{2, "a.md"}, {2, "b.md#h"}}},
		{"reference definition", "[ref]: ../x.md#y\n  [r2]: <z.md>\n", []Link{{1, "../x.md#y"}, {2, "z.md"}}},
		{"html", `<img src="p.png"> <a href="../../out.md">o</a>` + "\n", []Link{{1, "p.png"}, {1, "../../out.md"}}},
		{"not in code spans", "`[a](nowhere.md)` and [b](b.md)\n", []Link{{1, "b.md"}}},
		{"not in fences", "```\n[a](nowhere.md)\n```\n[b](b.md)\n", []Link{{4, "b.md"}}},
		{"a link across lines", "[some\ntext](t.md)\n", []Link{{2, "t.md"}}},
		{"plain brackets are no link", "a[i] (x) and [x]: y\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Links(tc.md); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Links = %v, want %v", got, tc.want)
			}
		})
	}
}
