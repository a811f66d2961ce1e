package report

import (
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
)

func TestTables(t *testing.T) {
	header := []string{"backend", "scenario", "rv", "ops/s", "p99 ms", "notes"}
	rows := [][]string{{"freshcache", "list-node", `""`, "5038", "12.1", "a; b"}, {"upstream", "get", "0", "228043", "0.08", ""}}
	var md strings.Builder
	WriteMarkdownTable(&md, header, rows, 3)
	want := "| backend | scenario | rv | ops/s | p99 ms | notes |\n|---|---|---|---:|---:|---|\n| freshcache | list-node | `\"\"` | 5038 | 12.1 | a; b |\n| upstream | get | 0 | 228043 | 0.08 |  |\n"
	if md.String() != want {
		t.Errorf("markdown\n%s\nwant\n%s", md.String(), want)
	}
	if rows[0][2] != `""` {
		t.Error("WriteMarkdownTable changed its input")
	}
	al := reporttest.Render(t, func(w io.Writer) error { return WriteAligned(w, header, rows) })
	if lines := strings.Split(strings.TrimSpace(al), "\n"); len(lines) != 3 || !strings.HasSuffix(lines[1], "a; b") {
		t.Errorf("aligned:\n%s", al)
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{1234.5: "1234", 100: "100", 12.34: "12.3", 1.234: "1.23", 0: "0.00"} {
		if got := Num(v); got != want {
			t.Errorf("Num(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestFirstError(t *testing.T) {
	var f FirstError
	if f.Get() != "" {
		t.Error("zero value not empty")
	}
	var wg sync.WaitGroup
	f.Set("first")
	for range 8 {
		wg.Go(func() { f.Set("later") })
	}
	wg.Wait()
	if f.Get() != "first" {
		t.Errorf("Get() = %q", f.Get())
	}
}

func TestFailureNotes(t *testing.T) {
	long := strings.Repeat("x", 81)
	cases := []struct {
		wrong, errs int64
		first       string
		want        []string
	}{
		{0, 0, "", nil},
		{2, 0, "", []string{"WRONG COUNT x2"}},
		{0, 3, "boom", []string{"3 errors: boom"}},
		{1, 1, long, []string{"WRONG COUNT x1", "1 errors: " + long[:80] + "..."}},
	}
	for _, tc := range cases {
		if got := FailureNotes(tc.wrong, tc.errs, tc.first); !slices.Equal(got, tc.want) {
			t.Errorf("FailureNotes(%d, %d, %q) = %q, want %q", tc.wrong, tc.errs, tc.first, got, tc.want)
		}
	}
}

func TestCompareFloat(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		a, b float64
		want int
	}{{1, 2, -1}, {2, 1, 1}, {1, 1, 0}, {nan, 1, 0}, {1, nan, 0}} {
		if got := CompareFloat(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareFloat(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
