package fanout

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Shared is the object a watcher receives in place of a deep copy of a
// cached object. One Shared is made per dispatched event and handed to every
// watcher that gets the event, so that the apiserver's serializers encode
// the event once per encoding instead of once per watcher, and the fan-out
// never copies objects.
//
// Contract, for whoever receives one:
//   - It implements runtime.CacheableObject: GetObject returns a deep copy
//     that the caller owns, and CacheEncode encodes at most once per encoder
//     identifier.
//   - It implements metav1.Object, so meta.Accessor works. Getters of maps,
//     slices and pointers return copies while the object is still shared,
//     so that writing through them cannot reach the cache.
//   - Any setter (and SetGroupVersionKind) first gives this Shared its own
//     deep copy (copy-on-write) and forgets cached encodings; the cache's
//     object is never modified.
//   - DeepCopyObject returns a deep copy of the wrapped object, not a Shared.
//   - One Shared goes to every watcher of an event, so a setter called by
//     one consumer is seen by the others (never by the cache). Consumers
//     that mutate call GetObject and mutate their copy.
//
// All methods are safe for concurrent use.
type Shared struct {
	mu struct {
		sync.RWMutex
		// obj is the cache's object until the first write, then a private
		// deep copy (owned is then true). acc is obj's metadata accessor.
		obj   runtime.Object
		acc   metav1.Object
		owned bool
		// encodings caches CacheEncode results by encoder identifier. It
		// is replaced, never cleared, on a write, so an encoding in flight
		// for the old content finishes into a map nobody reads.
		encodings map[runtime.Identifier]*encoding
	}
}

// encoding is one cached serialization.
type encoding struct {
	once sync.Once
	raw  []byte
	err  error
}

var (
	_ runtime.CacheableObject = (*Shared)(nil)
	_ metav1.Object           = (*Shared)(nil)
	_ schema.ObjectKind       = (*Shared)(nil)
)

// share wraps a cached object without copying it. It fails for objects
// without metadata, which the caller then deep-copies instead.
func share(obj runtime.Object) (*Shared, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("watchcache/fanout: cannot share %T: %w", obj, err)
	}
	s := &Shared{}
	s.mu.obj, s.mu.acc = obj, acc
	return s, nil
}

// shareOrCopy returns what one watcher may hand out for a cached object:
// a Shared, or a deep copy for an object without metadata.
func shareOrCopy(obj runtime.Object) runtime.Object {
	if s, err := share(obj); err == nil {
		return s
	}
	return obj.DeepCopyObject()
}

// write runs set on a private copy of the object, made on the first write.
func (s *Shared) write(set func(acc metav1.Object)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.owned {
		s.mu.obj = s.mu.obj.DeepCopyObject()
		acc, err := meta.Accessor(s.mu.obj)
		if err != nil {
			// The copy has the type of the original, which had metadata.
			panic(fmt.Sprintf("watchcache/fanout: copy of %T lost its metadata: %v", s.mu.obj, err))
		}
		s.mu.acc = acc
		s.mu.owned = true
	}
	s.mu.encodings = nil
	set(s.mu.acc)
}

// read runs get on the current object under the read lock and tells it
// whether the object is still shared with the cache.
func (s *Shared) read(get func(acc metav1.Object, shared bool)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	get(s.mu.acc, !s.mu.owned)
}

// CacheEncode implements runtime.CacheableObject.
func (s *Shared) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	e := s.encodingFor(id)
	e.once.Do(func() {
		var buf bytes.Buffer
		// encode owns its input and may set fields (e.g. the kind).
		e.err = encode(s.GetObject(), &buf)
		e.raw = buf.Bytes()
	})
	if e.err != nil {
		return e.err
	}
	if sp, ok := w.(runtime.Splice); ok {
		sp.Splice(e.raw)
		return nil
	}
	_, err := w.Write(e.raw)
	return err
}

func (s *Shared) encodingFor(id runtime.Identifier) *encoding {
	s.mu.RLock()
	e := s.mu.encodings[id]
	s.mu.RUnlock()
	if e != nil {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e = s.mu.encodings[id]; e == nil {
		if s.mu.encodings == nil {
			s.mu.encodings = make(map[runtime.Identifier]*encoding, 1)
		}
		e = &encoding{}
		s.mu.encodings[id] = e
	}
	return e
}

// GetObject implements runtime.CacheableObject: a deep copy the caller owns.
func (s *Shared) GetObject() runtime.Object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.obj.DeepCopyObject()
}

// DeepCopyObject implements runtime.Object.
func (s *Shared) DeepCopyObject() runtime.Object { return s.GetObject() }

// GetObjectKind implements runtime.Object. The Shared is its own
// schema.ObjectKind, so that setting the kind copies first.
func (s *Shared) GetObjectKind() schema.ObjectKind { return s }

// GroupVersionKind implements schema.ObjectKind.
func (s *Shared) GroupVersionKind() schema.GroupVersionKind {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.obj.GetObjectKind().GroupVersionKind()
}

// SetGroupVersionKind implements schema.ObjectKind.
func (s *Shared) SetGroupVersionKind(gvk schema.GroupVersionKind) {
	if s.GroupVersionKind() == gvk {
		return
	}
	// write holds the lock and has made s.mu.obj private when set runs.
	s.write(func(metav1.Object) { s.mu.obj.GetObjectKind().SetGroupVersionKind(gvk) })
}

// metav1.Object. Scalar getters read through; map, slice and pointer
// getters copy while the object is shared.

// GetNamespace implements metav1.Object on the shared object.
func (s *Shared) GetNamespace() (v string) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetNamespace() })
	return v
}

// SetNamespace implements metav1.Object on the shared object.
func (s *Shared) SetNamespace(v string) { s.write(func(a metav1.Object) { a.SetNamespace(v) }) }

// GetName implements metav1.Object on the shared object.
func (s *Shared) GetName() (v string) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetName() })
	return v
}

// SetName implements metav1.Object on the shared object.
func (s *Shared) SetName(v string) { s.write(func(a metav1.Object) { a.SetName(v) }) }

// GetGenerateName implements metav1.Object on the shared object.
func (s *Shared) GetGenerateName() (v string) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetGenerateName() })
	return v
}

// SetGenerateName implements metav1.Object on the shared object.
func (s *Shared) SetGenerateName(v string) { s.write(func(a metav1.Object) { a.SetGenerateName(v) }) }

// GetUID implements metav1.Object on the shared object.
func (s *Shared) GetUID() (v types.UID) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetUID() })
	return v
}

// SetUID implements metav1.Object on the shared object.
func (s *Shared) SetUID(v types.UID) { s.write(func(a metav1.Object) { a.SetUID(v) }) }

// GetResourceVersion implements metav1.Object on the shared object.
func (s *Shared) GetResourceVersion() (v string) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetResourceVersion() })
	return v
}

// SetResourceVersion implements metav1.Object on the shared object.
func (s *Shared) SetResourceVersion(v string) {
	s.write(func(a metav1.Object) { a.SetResourceVersion(v) })
}

// GetGeneration implements metav1.Object on the shared object.
func (s *Shared) GetGeneration() (v int64) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetGeneration() })
	return v
}

// SetGeneration implements metav1.Object on the shared object.
func (s *Shared) SetGeneration(v int64) { s.write(func(a metav1.Object) { a.SetGeneration(v) }) }

// GetSelfLink implements metav1.Object on the shared object.
func (s *Shared) GetSelfLink() (v string) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetSelfLink() })
	return v
}

// SetSelfLink implements metav1.Object on the shared object.
func (s *Shared) SetSelfLink(v string) { s.write(func(a metav1.Object) { a.SetSelfLink(v) }) }

// GetCreationTimestamp implements metav1.Object on the shared object.
func (s *Shared) GetCreationTimestamp() (v metav1.Time) {
	s.read(func(a metav1.Object, _ bool) { v = a.GetCreationTimestamp() })
	return v
}

// SetCreationTimestamp implements metav1.Object on the shared object.
func (s *Shared) SetCreationTimestamp(v metav1.Time) {
	s.write(func(a metav1.Object) { a.SetCreationTimestamp(v) })
}

// GetDeletionTimestamp implements metav1.Object on the shared object.
func (s *Shared) GetDeletionTimestamp() (v *metav1.Time) {
	s.read(func(a metav1.Object, shared bool) {
		v = a.GetDeletionTimestamp()
		if shared && v != nil {
			v = v.DeepCopy()
		}
	})
	return v
}

// SetDeletionTimestamp implements metav1.Object on the shared object.
func (s *Shared) SetDeletionTimestamp(v *metav1.Time) {
	s.write(func(a metav1.Object) { a.SetDeletionTimestamp(v) })
}

// GetDeletionGracePeriodSeconds implements metav1.Object on the shared object.
func (s *Shared) GetDeletionGracePeriodSeconds() (v *int64) {
	s.read(func(a metav1.Object, shared bool) {
		v = a.GetDeletionGracePeriodSeconds()
		if shared && v != nil {
			c := *v
			v = &c
		}
	})
	return v
}

// SetDeletionGracePeriodSeconds implements metav1.Object on the shared object.
func (s *Shared) SetDeletionGracePeriodSeconds(v *int64) {
	s.write(func(a metav1.Object) { a.SetDeletionGracePeriodSeconds(v) })
}

// GetLabels implements metav1.Object on the shared object.
func (s *Shared) GetLabels() (v map[string]string) {
	s.read(func(a metav1.Object, shared bool) {
		if v = a.GetLabels(); shared {
			v = maps.Clone(v)
		}
	})
	return v
}

// SetLabels implements metav1.Object on the shared object.
func (s *Shared) SetLabels(v map[string]string) { s.write(func(a metav1.Object) { a.SetLabels(v) }) }

// GetAnnotations implements metav1.Object on the shared object.
func (s *Shared) GetAnnotations() (v map[string]string) {
	s.read(func(a metav1.Object, shared bool) {
		if v = a.GetAnnotations(); shared {
			v = maps.Clone(v)
		}
	})
	return v
}

// SetAnnotations implements metav1.Object on the shared object.
func (s *Shared) SetAnnotations(v map[string]string) {
	s.write(func(a metav1.Object) { a.SetAnnotations(v) })
}

// GetFinalizers implements metav1.Object on the shared object.
func (s *Shared) GetFinalizers() (v []string) {
	s.read(func(a metav1.Object, shared bool) {
		if v = a.GetFinalizers(); shared {
			v = slices.Clone(v)
		}
	})
	return v
}

// SetFinalizers implements metav1.Object on the shared object.
func (s *Shared) SetFinalizers(v []string) { s.write(func(a metav1.Object) { a.SetFinalizers(v) }) }

// GetOwnerReferences implements metav1.Object on the shared object.
func (s *Shared) GetOwnerReferences() (v []metav1.OwnerReference) {
	s.read(func(a metav1.Object, shared bool) {
		v = a.GetOwnerReferences()
		if shared && v != nil {
			c := make([]metav1.OwnerReference, len(v))
			for i := range v {
				v[i].DeepCopyInto(&c[i])
			}
			v = c
		}
	})
	return v
}

// SetOwnerReferences implements metav1.Object on the shared object.
func (s *Shared) SetOwnerReferences(v []metav1.OwnerReference) {
	s.write(func(a metav1.Object) { a.SetOwnerReferences(v) })
}

// GetManagedFields implements metav1.Object on the shared object.
func (s *Shared) GetManagedFields() (v []metav1.ManagedFieldsEntry) {
	s.read(func(a metav1.Object, shared bool) {
		v = a.GetManagedFields()
		if shared && v != nil {
			c := make([]metav1.ManagedFieldsEntry, len(v))
			for i := range v {
				v[i].DeepCopyInto(&c[i])
			}
			v = c
		}
	})
	return v
}

// SetManagedFields implements metav1.Object on the shared object.
func (s *Shared) SetManagedFields(v []metav1.ManagedFieldsEntry) {
	s.write(func(a metav1.Object) { a.SetManagedFields(v) })
}
