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

// get returns field of the current object; if clone is not nil, it copies
// what field returns while the object is still shared with the cache.
func get[T any](s *Shared, field func(metav1.Object) T, clone func(T) T) (v T) {
	s.read(func(a metav1.Object, shared bool) {
		if v = field(a); shared && clone != nil {
			v = clone(v)
		}
	})
	return v
}

// set sets field of the object's private copy to v.
func set[T any](s *Shared, field func(metav1.Object, T), v T) {
	s.write(func(a metav1.Object) { field(a, v) })
}

// clonePtr copies what p points to.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// deepCopyEach deep-copies every element of v.
func deepCopyEach[T any, P interface {
	*T
	DeepCopyInto(*T)
}](v []T) []T {
	if v == nil {
		return nil
	}
	c := make([]T, len(v))
	for i := range v {
		P(&v[i]).DeepCopyInto(&c[i])
	}
	return c
}

// Getters.

// GetNamespace implements metav1.Object on the shared object.
func (s *Shared) GetNamespace() string { return get(s, metav1.Object.GetNamespace, nil) }

// GetName implements metav1.Object on the shared object.
func (s *Shared) GetName() string { return get(s, metav1.Object.GetName, nil) }

// GetGenerateName implements metav1.Object on the shared object.
func (s *Shared) GetGenerateName() string { return get(s, metav1.Object.GetGenerateName, nil) }

// GetUID implements metav1.Object on the shared object.
func (s *Shared) GetUID() types.UID { return get(s, metav1.Object.GetUID, nil) }

// GetResourceVersion implements metav1.Object on the shared object.
func (s *Shared) GetResourceVersion() string { return get(s, metav1.Object.GetResourceVersion, nil) }

// GetGeneration implements metav1.Object on the shared object.
func (s *Shared) GetGeneration() int64 { return get(s, metav1.Object.GetGeneration, nil) }

// GetSelfLink implements metav1.Object on the shared object.
func (s *Shared) GetSelfLink() string { return get(s, metav1.Object.GetSelfLink, nil) }

// GetCreationTimestamp implements metav1.Object on the shared object.
func (s *Shared) GetCreationTimestamp() metav1.Time {
	return get(s, metav1.Object.GetCreationTimestamp, nil)
}

// GetDeletionTimestamp implements metav1.Object on the shared object.
func (s *Shared) GetDeletionTimestamp() *metav1.Time {
	return get(s, metav1.Object.GetDeletionTimestamp, (*metav1.Time).DeepCopy)
}

// GetDeletionGracePeriodSeconds implements metav1.Object on the shared object.
func (s *Shared) GetDeletionGracePeriodSeconds() *int64 {
	return get(s, metav1.Object.GetDeletionGracePeriodSeconds, clonePtr[int64])
}

// GetLabels implements metav1.Object on the shared object.
func (s *Shared) GetLabels() map[string]string {
	return get(s, metav1.Object.GetLabels, maps.Clone[map[string]string])
}

// GetAnnotations implements metav1.Object on the shared object.
func (s *Shared) GetAnnotations() map[string]string {
	return get(s, metav1.Object.GetAnnotations, maps.Clone[map[string]string])
}

// GetFinalizers implements metav1.Object on the shared object.
func (s *Shared) GetFinalizers() []string {
	return get(s, metav1.Object.GetFinalizers, slices.Clone[[]string])
}

// GetOwnerReferences implements metav1.Object on the shared object.
func (s *Shared) GetOwnerReferences() []metav1.OwnerReference {
	return get(s, metav1.Object.GetOwnerReferences, deepCopyEach[metav1.OwnerReference])
}

// GetManagedFields implements metav1.Object on the shared object.
func (s *Shared) GetManagedFields() []metav1.ManagedFieldsEntry {
	return get(s, metav1.Object.GetManagedFields, deepCopyEach[metav1.ManagedFieldsEntry])
}

// Setters: each gives this Shared its own copy first (write).

// SetNamespace implements metav1.Object on the shared object.
func (s *Shared) SetNamespace(v string) { set(s, metav1.Object.SetNamespace, v) }

// SetName implements metav1.Object on the shared object.
func (s *Shared) SetName(v string) { set(s, metav1.Object.SetName, v) }

// SetGenerateName implements metav1.Object on the shared object.
func (s *Shared) SetGenerateName(v string) { set(s, metav1.Object.SetGenerateName, v) }

// SetUID implements metav1.Object on the shared object.
func (s *Shared) SetUID(v types.UID) { set(s, metav1.Object.SetUID, v) }

// SetResourceVersion implements metav1.Object on the shared object.
func (s *Shared) SetResourceVersion(v string) { set(s, metav1.Object.SetResourceVersion, v) }

// SetGeneration implements metav1.Object on the shared object.
func (s *Shared) SetGeneration(v int64) { set(s, metav1.Object.SetGeneration, v) }

// SetSelfLink implements metav1.Object on the shared object.
func (s *Shared) SetSelfLink(v string) { set(s, metav1.Object.SetSelfLink, v) }

// SetCreationTimestamp implements metav1.Object on the shared object.
func (s *Shared) SetCreationTimestamp(v metav1.Time) { set(s, metav1.Object.SetCreationTimestamp, v) }

// SetDeletionTimestamp implements metav1.Object on the shared object.
func (s *Shared) SetDeletionTimestamp(v *metav1.Time) { set(s, metav1.Object.SetDeletionTimestamp, v) }

// SetDeletionGracePeriodSeconds implements metav1.Object on the shared object.
func (s *Shared) SetDeletionGracePeriodSeconds(v *int64) {
	set(s, metav1.Object.SetDeletionGracePeriodSeconds, v)
}

// SetLabels implements metav1.Object on the shared object.
func (s *Shared) SetLabels(v map[string]string) { set(s, metav1.Object.SetLabels, v) }

// SetAnnotations implements metav1.Object on the shared object.
func (s *Shared) SetAnnotations(v map[string]string) { set(s, metav1.Object.SetAnnotations, v) }

// SetFinalizers implements metav1.Object on the shared object.
func (s *Shared) SetFinalizers(v []string) { set(s, metav1.Object.SetFinalizers, v) }

// SetOwnerReferences implements metav1.Object on the shared object.
func (s *Shared) SetOwnerReferences(v []metav1.OwnerReference) {
	set(s, metav1.Object.SetOwnerReferences, v)
}

// SetManagedFields implements metav1.Object on the shared object.
func (s *Shared) SetManagedFields(v []metav1.ManagedFieldsEntry) {
	set(s, metav1.Object.SetManagedFields, v)
}
