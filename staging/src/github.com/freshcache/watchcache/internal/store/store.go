package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/btree"
)

// degree of every btree. Upstream's benchmarks found 16 among the fastest
// for apiserver workloads; nothing here depends on the exact value.
const degree = 16

// ErrIndex is returned when an index function fails. The object is not
// applied, so that the state and its indexes never disagree.
var ErrIndex = errors.New("watchcache/store: index function failed")

// Writer owns the mutable trees. Exactly one goroutine may use a Writer.
type Writer struct {
	objects    *btree.BTreeG[*Object]
	indexFuncs map[string]IndexFunc
	indexes    map[string]*btree.BTreeG[indexEntry]
	rv         uint64
}

// NewWriter returns an empty state at revision 0 that maintains one
// secondary index per entry of indexFuncs.
func NewWriter(indexFuncs map[string]IndexFunc) *Writer {
	w := &Writer{indexFuncs: indexFuncs}
	w.clear()
	return w
}

func (w *Writer) clear() {
	w.objects = btree.NewG(degree, lessObject)
	w.indexes = make(map[string]*btree.BTreeG[indexEntry], len(w.indexFuncs))
	for name := range w.indexFuncs {
		w.indexes[name] = btree.NewG(degree, lessIndexEntry)
	}
}

// RV is the revision of the last change applied.
func (w *Writer) RV() uint64 { return w.rv }

// Len is the number of objects.
func (w *Writer) Len() int { return w.objects.Len() }

// Get returns the current version of key.
func (w *Writer) Get(key string) (*Object, bool) {
	return w.objects.Get(&Object{Key: key})
}

// Reset replaces the whole state with objs at revision rv, as after a list.
// Snapshots taken before Reset are unaffected.
func (w *Writer) Reset(objs []*Object, rv uint64) error {
	w.clear()
	if !sortedByKey(objs) {
		// Not a list in key order (or duplicate keys): insert one by one,
		// the later version of a key winning.
		for _, o := range objs {
			if _, err := w.Put(o); err != nil {
				return err
			}
		}
		w.rv = rv
		return nil
	}
	entries := make(map[string][]indexEntry, len(w.indexFuncs))
	for _, o := range objs {
		values, err := w.indexValues(o)
		if err != nil {
			return err
		}
		for name, vs := range values {
			for _, v := range vs {
				entries[name] = append(entries[name], indexEntry{value: v, obj: o})
			}
		}
	}
	bulkLoad(w.objects, objs)
	for name, es := range entries {
		slices.SortFunc(es, compareIndexEntry)
		// Duplicate values of one object collapse into one entry.
		bulkLoad(w.indexes[name], dedup(es))
	}
	w.rv = rv
	return nil
}

func sortedByKey(objs []*Object) bool {
	for i := 1; i < len(objs); i++ {
		if objs[i-1].Key >= objs[i].Key {
			return false
		}
	}
	return true
}

func compareIndexEntry(a, b indexEntry) int {
	if c := strings.Compare(a.value, b.value); c != 0 {
		return c
	}
	return strings.Compare(a.obj.Key, b.obj.Key)
}

// bulkLoad inserts sorted, distinct items into an empty tree so that its
// nodes end up nearly full. Inserting in order alone leaves every node but
// the last half full (a full node splits in two halves and only the right
// one receives later items), which for 20k objects and two indexes costs
// ~60 B per object. So the even-numbered items go in first, building half
// full nodes, and the odd-numbered ones then fill the gap next to each
// even item: a node gains one item per item it holds and stays below the
// split size, instead of splitting.
func bulkLoad[T any](t *btree.BTreeG[T], sorted []T) {
	for i := 0; i < len(sorted); i += 2 {
		t.ReplaceOrInsert(sorted[i])
	}
	for i := 1; i < len(sorted); i += 2 {
		t.ReplaceOrInsert(sorted[i])
	}
}

// Put inserts or replaces o.Key and advances the state to o.RV (if higher).
// It returns the previous version, if any.
func (w *Writer) Put(o *Object) (*Object, error) {
	values, err := w.indexValues(o)
	if err != nil {
		return nil, err
	}
	prev, _ := w.objects.ReplaceOrInsert(o)
	if prev != nil {
		w.unindex(prev)
	}
	for name, vs := range values {
		idx := w.indexes[name]
		for _, v := range vs {
			idx.ReplaceOrInsert(indexEntry{value: v, obj: o})
		}
	}
	w.advance(o.RV)
	return prev, nil
}

// Delete removes key and advances the state to rv. It returns the removed
// object, if any.
func (w *Writer) Delete(key string, rv uint64) *Object {
	prev, ok := w.objects.Delete(&Object{Key: key})
	if ok {
		w.unindex(prev)
	}
	w.advance(rv)
	return prev
}

// Advance moves the state's revision forward without a change, as a watch
// progress notification does. It never moves it back.
func (w *Writer) Advance(rv uint64) { w.advance(rv) }

func (w *Writer) advance(rv uint64) {
	if rv > w.rv {
		w.rv = rv
	}
}

func (w *Writer) indexValues(o *Object) (map[string][]string, error) {
	if len(w.indexFuncs) == 0 {
		return nil, nil
	}
	out := make(map[string][]string, len(w.indexFuncs))
	for name, fn := range w.indexFuncs {
		vs, err := fn(o.Obj)
		if err != nil {
			return nil, fmt.Errorf("%w: index %q on %q: %w", ErrIndex, name, o.Key, err)
		}
		out[name] = vs
	}
	return out, nil
}

// unindex removes every index entry of prev. The values are recomputed from
// the object, which is immutable, so they are the ones inserted.
func (w *Writer) unindex(prev *Object) {
	for name, fn := range w.indexFuncs {
		vs, err := fn(prev.Obj)
		if err != nil {
			// It succeeded when prev was inserted and prev has not changed.
			continue
		}
		for _, v := range vs {
			w.indexes[name].Delete(indexEntry{value: v, obj: prev})
		}
	}
}

// Snapshot returns an immutable view of the current state. It is O(1).
func (w *Writer) Snapshot() *Snapshot {
	s := &Snapshot{rv: w.rv, objects: w.objects.Clone()}
	if len(w.indexes) > 0 {
		s.indexes = make(map[string]*btree.BTreeG[indexEntry], len(w.indexes))
		for name, idx := range w.indexes {
			s.indexes[name] = idx.Clone()
		}
	}
	return s
}

// Snapshot is an immutable state of the cache at revision RV. All methods are
// safe for concurrent use.
type Snapshot struct {
	rv      uint64
	objects *btree.BTreeG[*Object]
	indexes map[string]*btree.BTreeG[indexEntry]
}

// RV is the revision this snapshot reflects.
func (s *Snapshot) RV() uint64 { return s.rv }

// AtRV returns the same state labelled with a later revision, as when a
// progress notification proves that nothing changed up to rv.
func (s *Snapshot) AtRV(rv uint64) *Snapshot {
	if rv <= s.rv {
		return s
	}
	c := *s
	c.rv = rv
	return &c
}

// Len is the number of objects.
func (s *Snapshot) Len() int { return s.objects.Len() }

// Get returns the object stored at key.
func (s *Snapshot) Get(key string) (*Object, bool) {
	return s.objects.Get(&Object{Key: key})
}

// Range calls fn for every object with from <= key < to, in key order, until
// fn returns false. An empty to means no upper bound.
func (s *Snapshot) Range(from, to string, fn func(*Object) bool) {
	if to == "" {
		s.objects.AscendGreaterOrEqual(&Object{Key: from}, fn)
		return
	}
	s.objects.AscendRange(&Object{Key: from}, &Object{Key: to}, fn)
}

// CountRange counts the objects with from <= key < to.
func (s *Snapshot) CountRange(from, to string) int {
	n := 0
	s.Range(from, to, func(*Object) bool { n++; return true })
	return n
}

// HasIndex reports whether the snapshot maintains the named index.
func (s *Snapshot) HasIndex(name string) bool {
	_, ok := s.indexes[name]
	return ok
}

// RangeIndex calls fn, in key order, for every object whose index name has
// value and whose key is in [from, to) (empty to: unbounded), until fn returns
// false. It reports false if the index does not exist.
func (s *Snapshot) RangeIndex(name, value, from, to string, fn func(*Object) bool) bool {
	idx, ok := s.indexes[name]
	if !ok {
		return false
	}
	visit := func(e indexEntry) bool {
		if e.value != value || (to != "" && e.obj.Key >= to) {
			return false
		}
		return fn(e.obj)
	}
	idx.AscendGreaterOrEqual(indexEntry{value: value, obj: &Object{Key: from}}, visit)
	return true
}

// IndexKeys returns, sorted, the keys that index name maps to value.
func (s *Snapshot) IndexKeys(name, value string) []string {
	var keys []string
	s.RangeIndex(name, value, "", "", func(o *Object) bool {
		keys = append(keys, o.Key)
		return true
	})
	return keys
}

// Keys returns every key, sorted.
func (s *Snapshot) Keys() []string {
	keys := make([]string, 0, s.objects.Len())
	s.objects.Ascend(func(o *Object) bool {
		keys = append(keys, o.Key)
		return true
	})
	return keys
}

// CheckIndexes verifies that every index holds exactly the entries its
// function computes from the objects. It is for tests and the invariants
// build; it is O(n).
func (s *Snapshot) CheckIndexes(funcs map[string]IndexFunc) error {
	for name, fn := range funcs {
		idx, ok := s.indexes[name]
		if !ok {
			return fmt.Errorf("index %q missing", name)
		}
		var want []indexEntry
		var ferr error
		s.objects.Ascend(func(o *Object) bool {
			vs, err := fn(o.Obj)
			if err != nil {
				ferr = err
				return false
			}
			for _, v := range vs {
				want = append(want, indexEntry{value: v, obj: o})
			}
			return true
		})
		if ferr != nil {
			return ferr
		}
		slices.SortFunc(want, compareIndexEntry)
		// Duplicate values of one object collapse into one entry.
		want = dedup(want)
		var got []indexEntry
		idx.Ascend(func(e indexEntry) bool { got = append(got, e); return true })
		if len(got) != len(want) {
			return fmt.Errorf("index %q has %d entries, objects give %d", name, len(got), len(want))
		}
		for i := range got {
			// Same value and the very object version the tree holds.
			if got[i] != want[i] {
				return fmt.Errorf("index %q entry %d is (%q, %q@%d), want (%q, %q@%d)", name, i,
					got[i].value, got[i].obj.Key, got[i].obj.RV, want[i].value, want[i].obj.Key, want[i].obj.RV)
			}
		}
	}
	return nil
}

func dedup(es []indexEntry) []indexEntry {
	out := es[:0]
	for i, e := range es {
		if i > 0 && e == es[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix, or "" if there is none.
func PrefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
