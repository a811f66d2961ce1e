package store

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/storage"
)

// Fields must select exactly as the fields.Set it was built from.
func TestFieldsMatchLikeTheirSet(t *testing.T) {
	set := fields.Set{"spec.nodeName": "n1", "metadata.name": "a", "metadata.namespace": "ns", "status.phase": "", "spec.restartPolicy": "Always"}
	lbls := labels.Set{"app": "web"}
	f := NewFields(set)
	if f.Len() != len(set) {
		t.Fatalf("len %d, want %d", f.Len(), len(set))
	}
	for n, v := range set {
		if !f.Has(n) || f.Get(n) != v {
			t.Errorf("field %q: Has=%v Get=%q, want %q", n, f.Has(n), f.Get(n), v)
		}
	}
	if f.Has("spec.missing") || f.Get("spec.missing") != "" {
		t.Errorf("a missing field is reported present")
	}
	if got := f.Set(); !reflect.DeepEqual(got, set) {
		t.Errorf("Set() = %v, want %v", got, set)
	}
	sels := []string{"", "spec.nodeName=n1", "spec.nodeName=n2", "spec.nodeName!=n1", "spec.nodeName!=n2",
		"metadata.name=a,metadata.namespace=ns", "metadata.name=a,metadata.namespace=other", "status.phase=",
		"status.phase!=", "spec.missing=", "spec.missing!=x", "spec.missing=x"}
	lsels := []string{"", "app=web", "app=db", "app"}
	for _, fs := range sels {
		for _, ls := range lsels {
			fsel, err := fields.ParseSelector(fs)
			if err != nil {
				t.Fatal(err)
			}
			lsel, err := labels.Parse(ls)
			if err != nil {
				t.Fatal(err)
			}
			p := storage.SelectionPredicate{Label: lsel, Field: fsel}
			if got, want := MatchesAttributes(&p, lbls, f), p.MatchesObjectAttributes(lbls, set); got != want {
				t.Errorf("fields %q labels %q: got %v, want %v", fs, ls, got, want)
			}
		}
	}
	var none *Fields
	if NewFields(nil) != nil || none.Has("metadata.name") || none.Get("metadata.name") != "" || len(none.Set()) != 0 {
		t.Errorf("nil Fields are not empty")
	}
	p := storage.SelectionPredicate{Label: labels.Everything(), Field: fields.OneTermEqualSelector("spec.nodeName", "")}
	if !MatchesAttributes(&p, nil, none) || !p.MatchesObjectAttributes(nil, nil) {
		t.Errorf("nil Fields do not match an empty value as a nil fields.Set does")
	}
}
