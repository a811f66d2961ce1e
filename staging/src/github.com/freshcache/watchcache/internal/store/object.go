package store

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is one cached object. It is shared by every snapshot that contains
// it, so nobody may mutate it, nor the runtime.Object it points to, once it is
// handed to the Writer. Callers that give the object to a client DeepCopy it.
type Object struct {
	// Key is the full storage key, e.g. "/pods/ns/name".
	Key string
	// Obj is the decoded object; its ResourceVersion is RV.
	Obj runtime.Object
	// RV is the etcd mod revision of this version of the object.
	RV uint64
	// Labels and Fields are computed once, when the object enters the cache,
	// so that selectors never recompute them.
	Labels labels.Set
	Fields *Fields
}

func lessObject(a, b *Object) bool { return a.Key < b.Key }

// IndexFunc returns the index values of an object. It is the shape of
// client-go's cache.IndexFunc, restricted to runtime.Object.
type IndexFunc func(obj runtime.Object) ([]string, error)

// indexEntry is one (value, object) pair of a secondary index. It points
// at the object version it was computed from rather than holding its key:
// that is 8 bytes smaller per entry and saves a lookup in the object tree
// per listed item. Entries are ordered by value, then by the object's key,
// so a Put of a new version of an object replaces its entry in place.
type indexEntry struct {
	value string
	obj   *Object
}

func lessIndexEntry(a, b indexEntry) bool {
	if a.value != b.value {
		return a.value < b.value
	}
	return a.obj.Key < b.obj.Key
}
