package localup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRenderCoreDNS(t *testing.T) {
	tests := []struct {
		name string
		s    coreDNSSettings
	}{
		{"defaults", coreDNSSettings{User: CoreDNSUser, NodeIP: "10.200.0.1", Node: "real-0", Image: "registry.k8s.io/coredns/coredns:v1.14.6",
			Kubeconfig: "/data/kubeconfigs/coredns.kubeconfig", ServiceIP: DNSServiceIP, HealthPort: 10054, ReadyPort: 10055}},
		{"other node IP", coreDNSSettings{User: "u", NodeIP: "192.168.77.1", Node: "real-0", Image: "img:1",
			Kubeconfig: "/k", ServiceIP: "10.0.0.10", HealthPort: 1, ReadyPort: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := renderCoreDNS(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			byKind := map[string]*unstructured.Unstructured{}
			for _, o := range objs {
				if _, ok := resourceOf[o.GetKind()]; !ok {
					t.Errorf("%s %s has no resource to apply it to", o.GetKind(), o.GetName())
				}
				byKind[o.GetKind()] = o
			}
			if len(objs) != 5 || len(byKind) != 5 {
				t.Fatalf("rendered %d objects of %d kinds, want 5 of 5", len(objs), len(byKind))
			}
			str := func(o *unstructured.Unstructured, path ...string) string {
				v, _, _ := unstructured.NestedString(o.Object, path...)
				return v
			}
			corefile := str(byKind["ConfigMap"], "data", "Corefile")
			for _, want := range []string{"bind " + tt.s.NodeIP, "kubeconfig /etc/coredns/kubeconfig freshcache-local", "forward . /etc/resolv.conf", "kubernetes cluster.local"} {
				if !strings.Contains(corefile, want) {
					t.Errorf("Corefile lacks %q:\n%s", want, corefile)
				}
			}
			if got := str(byKind["Service"], "spec", "clusterIP"); got != tt.s.ServiceIP {
				t.Errorf("kube-dns clusterIP = %q, want %s", got, tt.s.ServiceIP)
			}
			pod, _, _ := unstructured.NestedMap(byKind["Deployment"].Object, "spec", "template", "spec")
			if pod["hostNetwork"] != true || pod["dnsPolicy"] != "Default" {
				t.Errorf("CoreDNS pod: hostNetwork %v, dnsPolicy %v; want the host's network and resolv.conf", pod["hostNetwork"], pod["dnsPolicy"])
			}
			if sel, _, _ := unstructured.NestedString(pod, "nodeSelector", "kubernetes.io/hostname"); sel != tt.s.Node {
				t.Errorf("nodeSelector = %q, want %s", sel, tt.s.Node)
			}
			vols, _, _ := unstructured.NestedSlice(pod, "volumes")
			found := false
			for _, v := range vols {
				if p, _, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); p == tt.s.Kubeconfig {
					found = true
				}
			}
			if !found {
				t.Errorf("no hostPath volume of %s in %v", tt.s.Kubeconfig, vols)
			}
			subjects, _, _ := unstructured.NestedSlice(byKind["ClusterRoleBinding"].Object, "subjects")
			if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != tt.s.User {
				t.Errorf("binding subjects = %v, want user %s", subjects, tt.s.User)
			}
		})
	}
}
