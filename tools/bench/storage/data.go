package storage

import (
	"fmt"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Shape is the data set: Pods pods spread round-robin over Nodes nodes and
// Namespaces namespaces. Pod i lives on node i%Nodes, in namespace
// i%Namespaces, and carries the label app=app-(i%Apps).
type Shape struct {
	Pods       int `json:"pods"`
	Nodes      int `json:"nodes"`
	Namespaces int `json:"namespaces"`
	Apps       int `json:"apps"`
}

// WithDefaults fills zero fields with the defaults of `freshcache-bench
// storage`: 20,000 pods on 200 nodes in 20 namespaces, of 97 apps.
func (s Shape) WithDefaults() Shape {
	if s.Pods <= 0 {
		s.Pods = 20000
	}
	if s.Nodes <= 0 {
		s.Nodes = 200
	}
	if s.Namespaces <= 0 {
		s.Namespaces = 20
	}
	if s.Apps <= 0 {
		s.Apps = 97 // prime, so apps do not line up with nodes or namespaces
	}
	return s
}

// AnnotationWritten carries the wall-clock time (Unix nanoseconds) at which
// the harness wrote a pod, so that a watcher can compute delivery latency.
const AnnotationWritten = "bench.freshcache.io/written"

// NodeName is the name of node n, as the pods' spec.nodeName holds it.
func NodeName(n int) string { return fmt.Sprintf("node-%05d", n) }

func namespaceName(n int) string { return fmt.Sprintf("bench-%03d", n) }
func appName(n int) string       { return fmt.Sprintf("app-%03d", n) }
func podName(i int) string       { return fmt.Sprintf("pod-%07d", i) }

// PodsOnNode is how many pods the shape puts on node n.
func (s Shape) PodsOnNode(n int) int {
	c := s.Pods / s.Nodes
	if n < s.Pods%s.Nodes {
		c++
	}
	return c
}

// podsOfApp is how many pods carry app=app-(a).
func (s Shape) podsOfApp(a int) int {
	c := s.Pods / s.Apps
	if a < s.Pods%s.Apps {
		c++
	}
	return c
}

// PodKey is pod i's namespace and name.
func (s Shape) PodKey(i int) (ns, name string) {
	return namespaceName(i % s.Namespaces), podName(i)
}

// pod builds pod i: a running two-container pod of about 2 KB in its
// protobuf storage encoding, shaped like a Deployment's pod. written, when
// non-zero, goes into AnnotationWritten; generation bumps a counter
// annotation so that updates change the object.
func (s Shape) pod(i int, written int64, generation int) *v1.Pod {
	ns, name := s.PodKey(i)
	node := i % s.Nodes
	app := appName(i % s.Apps)
	hash := fmt.Sprintf("%08x", uint32(i%s.Apps)*2654435761)
	ann := map[string]string{
		"kubernetes.io/config.seen":   "2025-01-01T00:00:00.000000000Z",
		"kubernetes.io/config.source": "api",
		"bench.freshcache.io/gen":     strconv.Itoa(generation),
	}
	if written != 0 {
		ann[AnnotationWritten] = strconv.FormatInt(written, 10)
	}
	cpu := resource.MustParse("100m")
	mem := resource.MustParse("128Mi")
	trueV := true
	created := metav1.Unix(1735689600+int64(i), 0)
	ip := fmt.Sprintf("10.%d.%d.%d", (i>>16)&0xff, (i>>8)&0xff, i&0xff)
	hostIP := fmt.Sprintf("192.168.%d.%d", (node>>8)&0xff, node&0xff)
	container := func(cname, image string, port int32) v1.Container {
		return v1.Container{
			Name:  cname,
			Image: image,
			Args:  []string{"--port=" + strconv.Itoa(int(port)), "--log-level=info"},
			Ports: []v1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: v1.ProtocolTCP}},
			Env: []v1.EnvVar{
				{Name: "APP", Value: app},
				{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "POD_NAMESPACE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
			},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: cpu, v1.ResourceMemory: mem},
				Limits:   v1.ResourceList{v1.ResourceMemory: mem},
			},
			VolumeMounts: []v1.VolumeMount{
				{Name: "config", MountPath: "/etc/" + cname},
				{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
			},
			ReadinessProbe: &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intOrStr(port)}},
				PeriodSeconds: 10,
			},
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: v1.TerminationMessageReadFile,
			ImagePullPolicy:          v1.PullIfNotPresent,
		}
	}
	status := func(cname, image string) v1.ContainerStatus {
		return v1.ContainerStatus{
			Name: cname, Ready: true, Image: image, ImageID: image + "@sha256:" + hash + hash + hash + hash + hash + hash + hash + hash,
			ContainerID: "containerd://" + hash + hash + hash + hash + hash + hash + hash + hash,
			Started:     &trueV,
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: created}},
		}
	}
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         ns,
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)),
			CreationTimestamp: created,
			Labels: map[string]string{
				"app":                         app,
				"pod-template-hash":           hash,
				"tier":                        []string{"frontend", "backend", "cache"}[i%3],
				"app.kubernetes.io/name":      app,
				"app.kubernetes.io/component": "server",
			},
			Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash,
				UID: types.UID("00000000-0000-4000-9000-" + fmt.Sprintf("%012d", i%s.Apps)), Controller: &trueV, BlockOwnerDeletion: &trueV,
			}},
		},
		Spec: v1.PodSpec{
			NodeName:           NodeName(node),
			ServiceAccountName: "default",
			RestartPolicy:      v1.RestartPolicyAlways,
			DNSPolicy:          v1.DNSClusterFirst,
			SchedulerName:      v1.DefaultSchedulerName,
			Containers: []v1.Container{
				container("server", "registry.example.com/"+app+"/server:v1.2.3", 8080),
				container("sidecar", "registry.example.com/mesh/proxy:v0.9.1", 15001),
			},
			Volumes: []v1.Volume{
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr64(3607)}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
			},
			Tolerations: []v1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr64(300)},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr64(300)},
			},
		},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			QOSClass:  v1.PodQOSBurstable,
			HostIP:    hostIP,
			PodIP:     ip,
			PodIPs:    []v1.PodIP{{IP: ip}},
			StartTime: &created,
			Conditions: []v1.PodCondition{
				{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: created},
				{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: created},
				{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: created},
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: created},
			},
			ContainerStatuses: []v1.ContainerStatus{
				status("server", "registry.example.com/"+app+"/server:v1.2.3"),
				status("sidecar", "registry.example.com/mesh/proxy:v0.9.1"),
			},
		},
	}
}

// lease builds node n's heartbeat lease in kube-node-lease, renewed at
// renew (Unix nanoseconds).
func (s Shape) lease(n int, renew int64) *coordinationv1.Lease {
	holder := NodeName(n)
	dur := int32(40)
	t := metav1.NewMicroTime(timeFromNanos(renew))
	return &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: holder, Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &holder,
			LeaseDurationSeconds: &dur,
			RenewTime:            &t,
		},
	}
}

func ptr64(v int64) *int64 { return &v }
