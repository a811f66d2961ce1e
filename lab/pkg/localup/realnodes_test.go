package localup

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestReconcileHollowTaints(t *testing.T) {
	other := corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name      string
		realNodes int
		before    map[string][]corev1.Taint // hollow-0, hollow-1, real-0
		want      map[string][]corev1.Taint
	}{
		{
			name: "real nodes taint the hollow ones only", realNodes: 1,
			before: map[string][]corev1.Taint{"hollow-0": nil, "hollow-1": {other}, "real-0": nil},
			want:   map[string][]corev1.Taint{"hollow-0": {HollowTaint}, "hollow-1": {other, HollowTaint}, "real-0": nil},
		},
		{
			name: "already tainted stays once", realNodes: 1,
			before: map[string][]corev1.Taint{"hollow-0": {HollowTaint}, "hollow-1": {HollowTaint}, "real-0": nil},
			want:   map[string][]corev1.Taint{"hollow-0": {HollowTaint}, "hollow-1": {HollowTaint}, "real-0": nil},
		},
		{
			name: "without real nodes the taint goes, others stay", realNodes: 0,
			before: map[string][]corev1.Taint{"hollow-0": {HollowTaint}, "hollow-1": {other, HollowTaint}, "real-0": nil},
			want:   map[string][]corev1.Taint{"hollow-0": nil, "hollow-1": {other}, "real-0": nil},
		},
		{
			name: "a real node's own taint is not ours to touch", realNodes: 0,
			before: map[string][]corev1.Taint{"hollow-0": nil, "hollow-1": nil, "real-0": {HollowTaint}},
			want:   map[string][]corev1.Taint{"hollow-0": nil, "hollow-1": nil, "real-0": {HollowTaint}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			ctx := context.Background()
			for name, taints := range tt.before {
				if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			o := NewOptions()
			o.RealNodes = tt.realNodes
			c := &Cluster{Options: o, Nodes: []*Node{{NodeName: "hollow-0"}, {NodeName: "hollow-1"}}}
			if err := c.reconcileHollowTaints(ctx, cs); err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.want {
				n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(n.Spec.Taints) == 0 && len(want) == 0 {
					continue
				}
				if !reflect.DeepEqual(n.Spec.Taints, want) {
					t.Errorf("%s taints = %v, want %v", name, n.Spec.Taints, want)
				}
			}
		})
	}
}
