package localup

// CoreDNS for the real nodes (--real-node-dns): the cluster's DNS as
// kubeadm deploys it (Deployment coredns and Service kube-dns at
// 10.0.0.10 in kube-system, the kubelets' clusterDNS), with one
// difference: the apiserver listens on loopback only, which a pod's own
// network cannot reach, so CoreDNS runs in the host's network namespace
// on the real node, talks to the apiserver at 127.0.0.1 with a client
// certificate of its own (user freshcache:coredns, bound to the
// permissions of kubeadm's system:coredns role), and serves DNS on the
// node IP, where kube-proxy sends the Service's traffic.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

const (
	// DNSServiceIP is kube-dns's ClusterIP, the tenth of the service range
	// as kubeadm picks it.
	DNSServiceIP = "10.0.0.10"
	coreDNSName  = "coredns"
	// CoreDNSUser is CoreDNS's identity towards the apiserver.
	CoreDNSUser = "freshcache:coredns"
	// CoreDNS's health and readiness ports, on the node IP.
	coreDNSHealthPort = 10054
	coreDNSReadyPort  = 10055
)

// coreDNSManifests are the objects, applied server-side by local-up.
var coreDNSManifests = template.Must(template.New("coredns").Parse(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: freshcache:coredns
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: freshcache:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: freshcache:coredns
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: {{.User}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  Corefile: |
    .:53 {
        bind {{.NodeIP}}
        errors
        health {{.NodeIP}}:{{.HealthPort}}
        ready {{.NodeIP}}:{{.ReadyPort}}
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            kubeconfig /etc/coredns/kubeconfig freshcache-local
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
        forward . /etc/resolv.conf
        cache 30
        loop
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: kube-dns}
  template:
    metadata:
      labels: {k8s-app: kube-dns}
    spec:
      hostNetwork: true
      dnsPolicy: Default
      priorityClassName: system-cluster-critical
      nodeSelector: {kubernetes.io/hostname: {{.Node}}}
      containers:
      - name: coredns
        image: {{.Image}}
        imagePullPolicy: IfNotPresent
        args: [-conf, /etc/coredns/Corefile]
        volumeMounts:
        - {name: config, mountPath: /etc/coredns/Corefile, subPath: Corefile, readOnly: true}
        - {name: kubeconfig, mountPath: /etc/coredns/kubeconfig, readOnly: true}
        readinessProbe:
          httpGet: {host: {{.NodeIP}}, port: {{.ReadyPort}}, path: /ready}
          periodSeconds: 2
        livenessProbe:
          httpGet: {host: {{.NodeIP}}, port: {{.HealthPort}}, path: /health}
          initialDelaySeconds: 10
      volumes:
      - name: config
        configMap: {name: coredns}
      - name: kubeconfig
        hostPath: {path: {{.Kubeconfig}}, type: File}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  clusterIP: {{.ServiceIP}}
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
`))

// coreDNSSettings fill coreDNSManifests.
type coreDNSSettings struct {
	User, NodeIP, Node, Image, Kubeconfig, ServiceIP string
	HealthPort, ReadyPort                            int
}

// renderCoreDNS returns the manifests as objects.
func renderCoreDNS(s coreDNSSettings) ([]*unstructured.Unstructured, error) {
	var b bytes.Buffer
	if err := coreDNSManifests.Execute(&b, s); err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&b, 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, fmt.Errorf("localup: CoreDNS manifests: %w", err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// resourceOf maps the manifests' kinds to their resources.
var resourceOf = map[string]string{
	"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
	"ConfigMap": "configmaps", "Deployment": "deployments", "Service": "services",
}

// deployCoreDNS applies the manifests (server-side, so a later run's
// changes replace an earlier run's) and waits for the CoreDNS pod to be
// Ready on the first real node.
func (c *Cluster) deployCoreDNS(ctx context.Context, admin kubernetes.Interface, out io.Writer) error {
	n := c.RealNodes[0]
	objs, err := renderCoreDNS(coreDNSSettings{
		User: CoreDNSUser, NodeIP: n.NodeIP, Node: n.NodeName, Image: realnode.CoreDNSImage,
		Kubeconfig: c.coreDNSKubeconfig(), ServiceIP: DNSServiceIP,
		HealthPort: coreDNSHealthPort, ReadyPort: coreDNSReadyPort,
	})
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(RESTConfig(c.APIServers[0].URL, c.PKI))
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
		if err != nil {
			return err
		}
		res := dyn.Resource(gv.WithResource(resourceOf[obj.GetKind()]))
		var ri dynamic.ResourceInterface = res
		if ns := obj.GetNamespace(); ns != "" {
			ri = res.Namespace(ns)
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		force := true
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "local-up", Force: &force}); err != nil {
			return fmt.Errorf("localup: applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	fmt.Fprintf(out, "CoreDNS: Service kube-system/kube-dns at %s, serving on %s:53 (host network of %s)\n", DNSServiceIP, n.NodeIP, n.NodeName)
	return c.waitFor(ctx, "CoreDNS Ready", func() (bool, string) {
		pods, err := admin.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil {
			return false, err.Error()
		}
		var states []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				return true, ""
			}
			states = append(states, p.Name+": "+string(p.Status.Phase))
		}
		return false, "pods: " + strings.Join(states, ", ")
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
