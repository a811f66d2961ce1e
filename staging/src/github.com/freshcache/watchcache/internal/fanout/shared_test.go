package fanout

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

func cachedPod() *example.Pod {
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "ns", ResourceVersion: "7",
		Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"},
		Finalizers:      []string{"f"},
		OwnerReferences: []metav1.OwnerReference{{Name: "o"}},
	}, Spec: example.PodSpec{NodeName: "n1"}}
}

// Writes through a Shared never reach the cached object, whichever way a
// consumer tries.
func TestSharedNeverChangesTheCachedObject(t *testing.T) {
	writes := map[string]func(s *Shared){
		"setter":                 func(s *Shared) { s.SetResourceVersion("9") },
		"versioner":              func(s *Shared) { _ = storage.APIObjectVersioner{}.UpdateObject(s, 9) },
		"meta.Accessor labels":   func(s *Shared) { a, _ := meta.Accessor(s); a.GetLabels()["a"] = "x" },
		"annotations map":        func(s *Shared) { s.GetAnnotations()["b"] = "x" },
		"finalizers slice":       func(s *Shared) { s.GetFinalizers()[0] = "x" },
		"owner references slice": func(s *Shared) { s.GetOwnerReferences()[0].Name = "x" },
		"kind": func(s *Shared) {
			s.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Kind: "Pod", Version: "v1"})
		},
		"GetObject copy":      func(s *Shared) { s.GetObject().(*example.Pod).Labels["a"] = "x" },
		"DeepCopyObject copy": func(s *Shared) { s.DeepCopyObject().(*example.Pod).Spec.NodeName = "x" },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			cached := cachedPod()
			s, err := share(cached)
			if err != nil {
				t.Fatal(err)
			}
			write(s)
			if !apiequality.Semantic.DeepEqual(cached, cachedPod()) {
				t.Fatalf("cached object changed: %+v", cached.ObjectMeta)
			}
		})
	}
}

// A setter is visible through the Shared afterwards (on its private copy).
func TestSharedSeesItsOwnWrites(t *testing.T) {
	s, _ := share(cachedPod())
	s.SetResourceVersion("9")
	s.SetLabels(map[string]string{"z": "1"})
	if s.GetResourceVersion() != "9" || s.GetLabels()["z"] != "1" || s.GetObject().(*example.Pod).ResourceVersion != "9" {
		t.Fatalf("writes lost: rv %s labels %v", s.GetResourceVersion(), s.GetLabels())
	}
}

// CacheEncode encodes once per identifier for all callers, and again after
// a write.
func TestSharedEncodesOncePerIdentifier(t *testing.T) {
	s, _ := share(cachedPod())
	var calls atomic.Int32
	encode := func(obj runtime.Object, w io.Writer) error {
		calls.Add(1)
		_, err := io.WriteString(w, obj.(*example.Pod).ResourceVersion)
		return err
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b bytes.Buffer
			if err := s.CacheEncode("json", encode, &b); err != nil || b.String() != "7" {
				t.Errorf("encoded %q, %v", b.String(), err)
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("encode called %d times, want 1", calls.Load())
	}
	var b bytes.Buffer
	_ = s.CacheEncode("proto", encode, &b)
	s.SetResourceVersion("9")
	b.Reset()
	_ = s.CacheEncode("json", encode, &b)
	if calls.Load() != 3 || b.String() != "9" {
		t.Fatalf("after a write: %d calls, encoded %q", calls.Load(), b.String())
	}
}
