package kwoknode

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/freshcache/freshcache/lab/internal/errtest"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" means valid
	}{
		{name: "defaults with nodes", change: func(o *Options) { o.Nodes = 1000 }},
		{name: "none", change: func(o *Options) { o.Nodes = 0 }},
		{name: "negative", change: func(o *Options) { o.Nodes = -1 }, want: "--kwok-nodes=-1"},
		{name: "too many", change: func(o *Options) { o.Nodes = MaxNodes + 1 }, want: "use 0 to"},
		{name: "no prefix", change: func(o *Options) { o.NamePrefix = "" }, want: "prefix"},
		{name: "bad cidr", change: func(o *Options) { o.PodCIDR = "10.64.0.0" }, want: "pod CIDR"},
		{name: "ipv6 cidr", change: func(o *Options) { o.PodCIDR = "fd00::/64" }, want: "pod CIDR"},
		{name: "bad node ip", change: func(o *Options) { o.NodeIPBase = "nope" }, want: "node IP base"},
		{name: "node ips leave the /8", change: func(o *Options) { o.NodeIPBase = "10.255.255.250"; o.Nodes = 10 }, want: "leave its /8"},
		{name: "short lease", change: func(o *Options) { o.NodeLeaseDurationSeconds = 3 }, want: "lease duration"},
		{name: "no status interval", change: func(o *Options) { o.NodeStatusInterval = 0 }, want: "status interval"},
		{name: "no pods", change: func(o *Options) { o.PodsPerNode = 0 }, want: "pods per node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.change(&o)
			errtest.WantOne(t, "Validate()", o.Validate(), tc.want)
		})
	}
}

func TestNodeNames(t *testing.T) {
	o := NewOptions()
	for _, i := range []int{0, 7, 999, MaxNodes - 1} {
		if got := o.NodeIndex(o.NodeName(i)); got != i {
			t.Errorf("NodeIndex(NodeName(%d)) = %d", i, got)
		}
	}
	for _, name := range []string{"hollow-0", "kwok-", "kwok-x", "kwok--1", "kwok-01", "real-0"} {
		if got := o.NodeIndex(name); got != -1 {
			t.Errorf("NodeIndex(%q) = %d, want -1", name, got)
		}
	}
}

func TestNode(t *testing.T) {
	o := NewOptions()
	taint := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		i      int
		wantIP string
	}{
		{0, "10.96.0.1"},
		{255, "10.96.1.0"},
		{4999, "10.96.19.136"},
	} {
		n, err := o.Node(tc.i, []corev1.Taint{taint})
		if err != nil {
			t.Fatal(err)
		}
		if n.Name != o.NodeName(tc.i) || n.Labels[ManagedLabel] != "true" || n.Labels[corev1.LabelHostname] != n.Name {
			t.Errorf("node %d: name %q labels %v", tc.i, n.Name, n.Labels)
		}
		if got := n.Status.Addresses[0]; got.Type != corev1.NodeInternalIP || got.Address != tc.wantIP {
			t.Errorf("node %d: first address %v, want InternalIP %s", tc.i, got, tc.wantIP)
		}
		if got := n.Status.Allocatable.Pods().Value(); got != int64(o.PodsPerNode) {
			t.Errorf("node %d: allocatable pods %d, want %d", tc.i, got, o.PodsPerNode)
		}
		if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != taint {
			t.Errorf("node %d: taints %v", tc.i, n.Spec.Taints)
		}
		if len(n.Status.Conditions) != 0 {
			t.Errorf("node %d: created with conditions %v; kwok's first stage must set them", tc.i, n.Status.Conditions)
		}
	}
	o.NodeIPBase = "10.255.255.255"
	if _, err := o.Node(1, nil); err == nil {
		t.Error("Node past the /8: no error")
	}
}

// TestConfig: every document parses, the kinds and stage names are what
// kwok and StageNames expect, and every placeholder is filled. (That kwok
// accepts and plays them is lab/test/e2e's TestLocalUpKwokNodes.)
func TestConfig(t *testing.T) {
	o := NewOptions()
	o.NodeStatusInterval = 2 * time.Minute
	cfg := o.Config()
	if strings.Contains(cfg, "@") {
		t.Fatalf("a placeholder is left:\n%s", cfg)
	}
	docs := strings.Split(cfg, "\n---\n")
	if len(docs) != len(StageNames) {
		t.Fatalf("%d documents, want %d", len(docs), len(StageNames))
	}
	type doc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			ResourceRef struct {
				Kind string `json:"kind"`
			} `json:"resourceRef"`
			Delay *struct {
				DurationMilliseconds       int64 `json:"durationMilliseconds"`
				JitterDurationMilliseconds int64 `json:"jitterDurationMilliseconds"`
			} `json:"delay"`
			Next struct {
				StatusTemplate string `json:"statusTemplate"`
				Delete         bool   `json:"delete"`
			} `json:"next"`
		} `json:"spec"`
	}
	var parsed []doc
	for i, d := range docs {
		var v doc
		if err := yaml.Unmarshal([]byte(d), &v); err != nil {
			t.Fatalf("document %d does not parse: %v\n%s", i, err, d)
		}
		parsed = append(parsed, v)
	}
	wantKind := map[string]string{
		"freshcache-node-ready": "Node", "freshcache-node-heartbeat": "Node",
		"freshcache-pod-running": "Pod", "freshcache-pod-gone": "Pod",
	}
	for i, name := range StageNames {
		s := parsed[i]
		if s.Kind != "Stage" || s.APIVersion != "kwok.x-k8s.io/v1alpha1" || s.Metadata.Name != name || s.Spec.ResourceRef.Kind != wantKind[name] {
			t.Errorf("stage %d: %s %s %q on %s, want Stage %q on %s", i, s.APIVersion, s.Kind, s.Metadata.Name, s.Spec.ResourceRef.Kind, name, wantKind[name])
		}
		if s.Spec.Next.StatusTemplate == "" && !s.Spec.Next.Delete {
			t.Errorf("stage %s does nothing", name)
		}
	}
	hb := parsed[1].Spec.Delay
	if hb == nil || hb.DurationMilliseconds != 120000 || hb.JitterDurationMilliseconds != 132000 {
		t.Errorf("heartbeat delay %+v, want 120000 ms up to 132000 ms", hb)
	}
	if !parsed[3].Spec.Next.Delete {
		t.Error("freshcache-pod-gone does not delete")
	}
}
