package store

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
)

func pod(key, node string, rv uint64) *Object {
	return &Object{Key: key, RV: rv, Obj: &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: key}, Spec: example.PodSpec{NodeName: node}}}
}

var byNode = map[string]IndexFunc{
	"f:spec.nodeName": func(o runtime.Object) ([]string, error) { return []string{o.(*example.Pod).Spec.NodeName}, nil },
}

type op struct {
	put    *Object
	delete string
	rv     uint64
}

func TestWriterAndSnapshots(t *testing.T) {
	cases := []struct {
		name      string
		ops       []op
		wantKeys  []string
		wantRV    uint64
		wantNodeA []string
	}{
		{name: "empty", wantKeys: []string{}},
		{
			name:      "puts are ordered by key",
			ops:       []op{{put: pod("/p/b", "a", 2)}, {put: pod("/p/a", "a", 3)}, {put: pod("/p/c", "b", 4)}},
			wantKeys:  []string{"/p/a", "/p/b", "/p/c"},
			wantRV:    4,
			wantNodeA: []string{"/p/a", "/p/b"},
		},
		{
			name:      "update moves the index entry",
			ops:       []op{{put: pod("/p/a", "a", 2)}, {put: pod("/p/a", "b", 3)}},
			wantKeys:  []string{"/p/a"},
			wantRV:    3,
			wantNodeA: nil,
		},
		{
			name:      "delete removes object and index entry",
			ops:       []op{{put: pod("/p/a", "a", 2)}, {put: pod("/p/b", "a", 3)}, {delete: "/p/a", rv: 4}},
			wantKeys:  []string{"/p/b"},
			wantRV:    4,
			wantNodeA: []string{"/p/b"},
		},
		{
			name:     "deleting a missing key still advances",
			ops:      []op{{delete: "/p/x", rv: 7}},
			wantKeys: []string{},
			wantRV:   7,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter(byNode)
			before := w.Snapshot()
			for _, o := range tc.ops {
				if o.put != nil {
					if _, err := w.Put(o.put); err != nil {
						t.Fatal(err)
					}
				} else {
					w.Delete(o.delete, o.rv)
				}
			}
			s := w.Snapshot()
			if got := s.Keys(); !reflect.DeepEqual(got, tc.wantKeys) {
				t.Errorf("keys = %v, want %v", got, tc.wantKeys)
			}
			if s.RV() != tc.wantRV {
				t.Errorf("rv = %d, want %d", s.RV(), tc.wantRV)
			}
			if got := s.IndexKeys("f:spec.nodeName", "a"); !reflect.DeepEqual(got, tc.wantNodeA) {
				t.Errorf("node a = %v, want %v", got, tc.wantNodeA)
			}
			if err := s.CheckIndexes(byNode); err != nil {
				t.Error(err)
			}
			if before.Len() != 0 || before.RV() != 0 {
				t.Errorf("snapshot taken before writes changed: len %d rv %d", before.Len(), before.RV())
			}
		})
	}
}

func TestRangeIsHalfOpen(t *testing.T) {
	w := NewWriter(nil)
	for i, k := range []string{"/p/a/1", "/p/a/2", "/p/ab", "/p/b/1"} {
		if _, err := w.Put(pod(k, "", uint64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	s := w.Snapshot()
	cases := []struct {
		from, to string
		want     []string
	}{
		{"/p/a/", PrefixEnd("/p/a/"), []string{"/p/a/1", "/p/a/2"}},
		{"/p/a/2", PrefixEnd("/p/a/"), []string{"/p/a/2"}},
		{"/p/a/1\x00", PrefixEnd("/p/"), []string{"/p/a/2", "/p/ab", "/p/b/1"}},
		{"/p/", "", []string{"/p/a/1", "/p/a/2", "/p/ab", "/p/b/1"}},
		{"/q/", PrefixEnd("/q/"), nil},
	}
	for _, tc := range cases {
		var got []string
		s.Range(tc.from, tc.to, func(o *Object) bool { got = append(got, o.Key); return true })
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Range(%q, %q) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
		if n := s.CountRange(tc.from, tc.to); n != len(tc.want) {
			t.Errorf("CountRange(%q, %q) = %d, want %d", tc.from, tc.to, n, len(tc.want))
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := map[string]string{"/a/": "/a0", "a": "b", "a\xff": "b", "\xff\xff": "", "": ""}
	for in, want := range cases {
		if got := PrefixEnd(in); got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSnapshotAtRV(t *testing.T) {
	w := NewWriter(nil)
	s := w.Snapshot()
	if s.AtRV(5).RV() != 5 || s.RV() != 0 {
		t.Fatal("AtRV must relabel a copy")
	}
	if s.AtRV(5).AtRV(3).RV() != 5 {
		t.Fatal("AtRV must never go back")
	}
}
