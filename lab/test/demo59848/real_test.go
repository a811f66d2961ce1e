package demo59848

// The replay with a real node (DEMO_59848_NODE=real, make demo-59848): a
// real kubelet on containerd runs a StatefulSet's pod, and the question is
// the runtime's own: after the kubelet restarts against the lagging
// apiserver, does containerd hold a container of the deleted pod created
// after the restart, while the pod's replacement runs on another node?

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

const (
	statefulSet = "web"
	realPod     = statefulSet + "-0"
	hollowNode  = "hollow-0"
)

// realNodeName is the real node's name; local-up names real node 0 so.
var realNodeName = localup.RealNodeName(0)

// realMode reports whether DEMO_59848_NODE asks for the real node, and
// whether this process can run one.
func realMode() (bool, error) {
	switch v := os.Getenv("DEMO_59848_NODE"); v {
	case "", "hollow":
		return false, nil
	case "real":
		if os.Geteuid() != 0 {
			return true, fmt.Errorf("DEMO_59848_NODE=real runs containerd and a kubelet, which needs root: run `sudo make demo-59848`")
		}
		return true, nil
	default:
		return false, fmt.Errorf("DEMO_59848_NODE=%q: want real or hollow", v)
	}
}

// runReal replays kubernetes#59848 in the form of its title. A real node
// R (containerd and the upstream kubelet, on A) runs web-0 of a
// StatefulSet; a hollow node H waits, cordoned. R is cordoned and H
// uncordoned, member 1 (B's) is cut off, web-0 is deleted through A; R's
// kubelet kills it and the StatefulSet controller re-creates web-0, which
// runs on H. R's kubelet restarts against B. If B hands it the old web-0,
// two copies of web-0 run at once: the new one on H, the old one on R
// again, in a container containerd created after the restart.
func runReal(t *testing.T, binDir, dir string, v variant, m kubeletMode) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute+observe)
	defer cancel()

	// Unix sockets live under the real node's directory, and their paths
	// must fit in 108 bytes: local-up's data goes to a short directory,
	// linked from the trial's.
	short := filepath.Join(os.TempDir(), "d59848", filepath.Base(filepath.Dir(dir))+"-"+filepath.Base(dir))
	if err := os.RemoveAll(short); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(short, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(short, filepath.Join(dir, "local-up")); err != nil {
		t.Fatal(err)
	}
	rc := startReplay(ctx, t, dir, binDir, v, realNodeName, func(o *localup.Options) {
		o.DataDir = short
		// Both nodes start on A, with the controllers: the real kubelet
		// must see the delete and kill the pod, as a kubelet on a healthy
		// apiserver does.
		o.Nodes = 1
		o.NodeAPIServer = 1
		o.RealNodes = 1
		o.RealNodeKubeProxy = false
		o.RealNodeDNS = false
		if m.watchList == "off" {
			o.RealNodeFeatureGates = map[string]bool{"WatchListClient": false}
		}
		o.KubemarkBinary = filepath.Join(binDir, "kubemark")
		o.KubeletBinary = filepath.Join(binDir, "kubelet")
		o.PauseBinary = filepath.Join(binDir, "freshcache-pause")
	})
	lc, a, b := rc.lc, rc.a, rc.b
	rt := criRuntime{socket: lc.RealNodes[0].ContainerdSocket()}

	// 1. web-0 on R: H is cordoned until then. The pod tolerates the
	// hollow nodes' taint, so its replacement may run on H.
	cordon(ctx, t, a, hollowNode, true)
	if _, err := a.AppsV1().StatefulSets(namespace).Create(ctx, statefulSetObject(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create StatefulSet through A: %v", err)
	}
	var oldUID types.UID
	waitFor(ctx, t, realPod+" Running on "+realNodeName+" with a running container", func() (bool, string) {
		p, err := a.CoreV1().Pods(namespace).Get(ctx, realPod, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != realNodeName || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("node %q phase %q", p.Spec.NodeName, p.Status.Phase)
		}
		cs, err := rt.containers(ctx, p.UID)
		if err != nil {
			return false, err.Error()
		}
		if running(cs) == 0 {
			return false, "no running container in containerd"
		}
		oldUID = p.UID
		return true, ""
	})
	t.Logf("%s (uid %s) runs on %s", realPod, oldUID, realNodeName)
	rc.waitBHolds(ctx, t, "the Running "+realPod, func(p *corev1.Pod) bool { return p.UID == oldUID })

	// 2. The replacement must go to H.
	cordon(ctx, t, a, realNodeName, true)
	cordon(ctx, t, a, hollowNode, false)

	// 3. Cut B's member off.
	rc.cutB(ctx, t)

	// 4. Delete web-0 through A. R's kubelet (on A) kills it and confirms;
	// the StatefulSet controller re-creates web-0, which runs on H.
	if err := a.CoreV1().Pods(namespace).Delete(ctx, realPod, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete through A: %v", err)
	}
	var newUID types.UID
	waitFor(ctx, t, "the new "+realPod+" Running on "+hollowNode+" and no container of the old one running", func() (bool, string) {
		cs, err := rt.containers(ctx, oldUID)
		if err != nil {
			return false, err.Error()
		}
		if n := running(cs); n > 0 {
			return false, fmt.Sprintf("%d container(s) of the old pod still running", n)
		}
		p, err := a.CoreV1().Pods(namespace).Get(ctx, realPod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not re-created yet"
		}
		if err != nil {
			return false, err.Error()
		}
		if p.UID == oldUID || p.Spec.NodeName != hollowNode || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("uid %s node %q phase %q", p.UID, p.Spec.NodeName, p.Status.Phase)
		}
		newUID = p.UID
		return true, ""
	})
	t.Logf("the new %s (uid %s) runs on %s; the old one's containers are stopped", realPod, newUID, hollowNode)
	stale := staleCheck(ctx, b, realNodeName)

	// 5. Restart R's kubelet against B, and watch containerd.
	restarted := time.Now()
	if err := lc.RestartRealNode(ctx, 0, 1); err != nil {
		t.Fatalf("restarting %s's kubelet against B: %v", realNodeName, err)
	}
	kubelet := lc.RealNodes[0].Kubelet()
	if kubelet == nil {
		t.Fatalf("%s has no kubelet after the restart", realNodeName)
	}
	var (
		bothRunning int
		lastErr     string
		// createdAt is when the first container of the old pod created
		// after the restart was created; zero while there is none.
		createdAt time.Time
	)
	observeKubelet(ctx, t, kubelet, func() {
		cs, err := rt.containers(ctx, oldUID)
		if err != nil {
			lastErr = err.Error()
			return
		}
		for _, c := range cs {
			if at := time.Unix(0, c.CreatedAt); at.After(restarted) && (createdAt.IsZero() || at.Before(createdAt)) {
				createdAt = at
			}
		}
		if running(cs) > 0 {
			// Is the replacement still running on H at this moment?
			if p, err := a.CoreV1().Pods(namespace).Get(ctx, realPod, metav1.GetOptions{}); err == nil &&
				p.UID == newUID && p.Status.Phase == corev1.PodRunning {
				bothRunning++
			}
		}
	})
	final, err := rt.containers(ctx, oldUID)
	if err != nil {
		final = nil
		lastErr = err.Error()
	}

	// 6. What the new kubelet asked B.
	route := rc.kubeletRoute(t, realNodeName, restarted)
	evidence := fmt.Sprintf("containerd: containers of the old %s (uid %s) created after the restart: %s; seconds in which it ran while the new %s (uid %s) ran on %s: %d; at the end %d container(s) of the old pod, %d running",
		realPod, oldUID, createdSummary(createdAt, restarted), realPod, newUID, hollowNode, bothRunning, len(final), running(final))
	if lastErr != "" {
		evidence += "; last CRI error: " + lastErr
	}
	return outcome{started: !createdAt.IsZero(), evidence: evidence, path: route, staleAtRV0: stale}
}

func createdSummary(at, restarted time.Time) string {
	if at.IsZero() {
		return "none"
	}
	return fmt.Sprintf("yes, the first %s after it", at.Sub(restarted).Round(100*time.Millisecond))
}

// statefulSetObject is web: one replica of the pause image, with no
// token volume (with B cut off a TokenRequest would fail and hide what the
// pod list did), a short grace period and a toleration of the hollow
// nodes' taint. IfNotPresent: the real node has the image imported, and the
// hollow node's fake image service "pulls" it.
func statefulSetObject() *appsv1.StatefulSet {
	one := int32(1)
	grace := int64(1)
	labels := map[string]string{"app": statefulSet}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: statefulSet, Namespace: namespace},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &one,
			ServiceName: statefulSet,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  new(bool),
					TerminationGracePeriodSeconds: &grace,
					Tolerations: []corev1.Toleration{{
						Key: localup.HollowTaint.Key, Operator: corev1.TolerationOpEqual, Value: localup.HollowTaint.Value, Effect: localup.HollowTaint.Effect,
					}},
					Containers: []corev1.Container{{Name: "c", Image: realnode.PauseImage, ImagePullPolicy: corev1.PullIfNotPresent}},
				},
			},
		},
	}
}

// cordon sets a node's spec.unschedulable through cs.
func cordon(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon %s=%t: %v", name, on, err)
	}
}

// criRuntime asks the node's containerd over CRI, the runtime's own
// record, not the kubelet's view.
type criRuntime struct{ socket string }

// containers lists every container of the pod with this UID, exited ones
// too.
func (r criRuntime) containers(ctx context.Context, uid types.UID) ([]*runtimeapi.Container, error) {
	conn, err := grpc.NewClient("unix://"+r.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := runtimeapi.NewRuntimeServiceClient(conn).ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(uid)}},
	})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	return resp.Containers, nil
}

func running(cs []*runtimeapi.Container) int {
	n := 0
	for _, c := range cs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			n++
		}
	}
	return n
}

// describeNode is the node a run's closing line talks about.
func describeNode(real bool) string {
	if real {
		return "real node, containerd"
	}
	return "hollow node"
}
