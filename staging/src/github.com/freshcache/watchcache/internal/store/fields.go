package store

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/storage"
)

// Fields is an object's selectable fields, kept as a slice sorted by name
// rather than as the fields.Set map GetAttrs returns. A pod's handful of
// fields take about half the memory this way (a small Go map costs ~330 B,
// most of it empty slots), and the cache keeps one per cached object.
// Lookups are a binary search over a few entries.
//
// *Fields implements fields.Fields, so field selectors match it directly;
// being a pointer, it converts to that interface without an allocation,
// which matters because every watcher matches every event it is offered.
// A nil *Fields has no fields.
type Fields struct {
	list []Field
}

// Field is one selectable field of an object.
type Field struct {
	Name, Value string
}

var _ fields.Fields = (*Fields)(nil)

// NewFields returns set as Fields, or nil for an empty set. The strings are
// shared, not copied.
func NewFields(set fields.Set) *Fields {
	if len(set) == 0 {
		return nil
	}
	list := make([]Field, 0, len(set))
	for n, v := range set {
		list = append(list, Field{Name: n, Value: v})
	}
	slices.SortFunc(list, func(a, b Field) int { return strings.Compare(a.Name, b.Name) })
	return &Fields{list: list}
}

func (f *Fields) find(name string) (int, bool) {
	if f == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(f.list, name, func(e Field, n string) int { return strings.Compare(e.Name, n) })
}

// Len is the number of fields.
func (f *Fields) Len() int {
	if f == nil {
		return 0
	}
	return len(f.list)
}

// Has implements fields.Fields.
func (f *Fields) Has(name string) bool {
	_, ok := f.find(name)
	return ok
}

// Get implements fields.Fields.
func (f *Fields) Get(name string) string {
	if i, ok := f.find(name); ok {
		return f.list[i].Value
	}
	return ""
}

// Set returns the fields as a fields.Set (a new map).
func (f *Fields) Set() fields.Set {
	s := make(fields.Set, f.Len())
	if f != nil {
		for _, e := range f.list {
			s[e.Name] = e.Value
		}
	}
	return s
}

// MatchesAttributes is storage.SelectionPredicate.MatchesObjectAttributes
// over Fields instead of a fields.Set: the same rules, without turning the
// fields back into a map.
func MatchesAttributes(p *storage.SelectionPredicate, l labels.Set, f *Fields) bool {
	if p.Label.Empty() && p.Field.Empty() {
		return true
	}
	if !p.Label.Matches(l) {
		return false
	}
	return p.Field == nil || p.Field.Matches(f)
}

// Selects reports whether o passes the predicate's label, field and shard
// selectors (the key range is the caller's business). A LIST and a watch
// select with it alike.
func Selects(p *storage.SelectionPredicate, o *Object) bool {
	if !MatchesAttributes(p, o.Labels, o.Fields) {
		return false
	}
	if p.ShardSelector != nil && !p.ShardSelector.Empty() {
		ok, err := p.MatchesSharding(o.Obj)
		return err == nil && ok
	}
	return true
}
