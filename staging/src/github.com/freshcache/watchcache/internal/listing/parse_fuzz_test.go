package listing

import (
	"strings"
	"testing"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/plan"
)

// FuzzParseListRequest feeds arbitrary resource versions, matches, limits
// and continue tokens to the LIST parser: it must never panic, and every
// client mistake must be a BadRequest.
func FuzzParseListRequest(f *testing.F) {
	tok, _ := storage.EncodeContinue("/pods/ns/a\x00", "/pods/", 7)
	neg, _ := storage.EncodeContinue("/pods/ns/a\x00", "/pods/", -1)
	seeds := []struct {
		rv, match, cont string
		limit           int64
		recursive       bool
	}{
		{"", "", "", 0, true},
		{"0", "", "", 10, true},
		{"12", "Exact", "", 1, true},
		{"12", "NotOlderThan", "", 0, false},
		{"abc", "", "", 0, true},
		{"-1", "", "", 0, true},
		{"18446744073709551616", "", "", 0, true},
		{"", "", tok, 2, true},
		{"", "", neg, 2, true},
		{"5", "", tok, 2, true},
		{"", "", "not-base64!", 1, true},
		{"", "", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi9ldGMifQ", 1, true},
		{"1", "Weird", "", 0, true},
		{"1", "", "", -5, true},
	}
	for _, s := range seeds {
		f.Add(s.rv, s.match, s.cont, s.limit, s.recursive)
	}
	f.Fuzz(func(t *testing.T, rv, match, cont string, limit int64, recursive bool) {
		opts := storage.ListOptions{
			ResourceVersion:      rv,
			ResourceVersionMatch: metav1.ResourceVersionMatch(match),
			Recursive:            recursive,
			Predicate:            storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: limit, Continue: cont},
		}
		req, err := Parse("/pods/", "/pods/ns", storage.APIObjectVersioner{}, opts)
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("client input %+v gave a non-BadRequest error: %v", opts, err)
			}
			return
		}
		if !strings.HasPrefix(req.Key, "/pods/") {
			t.Fatalf("key %q escaped the resource prefix", req.Key)
		}
		if req.ContinueKey != "" && !strings.HasPrefix(req.ContinueKey, req.Key) {
			t.Fatalf("continue key %q escaped the listed prefix %q", req.ContinueKey, req.Key)
		}
		if p := plan.For(req.Plan(opts), allGates, readyState); p.Source == plan.Exact && p.RV == 0 {
			t.Fatalf("exact plan without a revision for %+v", opts)
		}
	})
}

var (
	allGates   = plan.Gates{Consistent: true, FreshZero: true, Snapshots: true}
	readyState = plan.State{Ready: true, RV: 1 << 50}
)

// FuzzContinueRoundTrip checks that a token the cache issues for a key
// under the listed prefix decodes back to the resume point and revision.
func FuzzContinueRoundTrip(f *testing.F) {
	f.Add("a", int64(1))
	f.Add("ns/name", int64(1<<40))
	f.Add("x/../y", int64(3))
	f.Add("\x00", int64(9))
	f.Fuzz(func(t *testing.T, suffix string, rv int64) {
		if rv <= 0 || suffix == "" || !utf8.ValidString(suffix) {
			// Continue tokens are JSON: invalid UTF-8 cannot round-trip
			// (it becomes U+FFFD), and Kubernetes keys are valid UTF-8.
			return
		}
		key := "/pods/ns/" + suffix
		tok, err := storage.EncodeContinue(key+"\x00", "/pods/ns/", rv)
		if err != nil {
			return
		}
		opts := storage.ListOptions{Recursive: true, Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: 1, Continue: tok}}
		req, err := Parse("/pods/", "/pods/ns/", storage.APIObjectVersioner{}, opts)
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("non-BadRequest for token of %q: %v", key, err)
			}
			return
		}
		p := plan.For(req.Plan(opts), allGates, readyState)
		if req.ContinueKey != key+"\x00" || p.RV != uint64(rv) || p.Source != plan.Exact {
			t.Fatalf("token of (%q, %d) decoded to (%q, plan %+v)", key, rv, req.ContinueKey, p)
		}
	})
}
