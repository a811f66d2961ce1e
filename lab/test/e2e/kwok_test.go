package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/pkg/localup/kwoknode"
)

// TestLocalUpKwokNodes: local-up --kwok-nodes=3 with the controllers and
// no hollow node. kwok, with local-up's stages and its own RBAC identity,
// must make the nodes Ready and keep renewing their Leases, run a
// Deployment's pods (Running with a pod IP from kwok's CIDR) and finish
// their deletion; a restart on the same data directory with
// --kwok-nodes=2 must remove the third node; and nothing may be left
// running after either stop.
func TestLocalUpKwokNodes(t *testing.T) {
	dir := t.TempDir()
	l := startLocalUp(t, "--data-dir="+dir, "--controllers=true", "--nodes=0", "--kwok-nodes=3")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k := l.ready.Kwok
	if k == nil || len(k.Nodes) != 3 {
		t.Fatalf("ready file lists kwok %+v; want 3 kwok nodes", k)
	}
	cs := l.client(t, 0)

	t.Run("identities", func(t *testing.T) { componentsHaveTheirOwnIdentity(ctx, t, l.ready) })
	t.Run("nodes", func(t *testing.T) {
		for _, name := range k.Nodes {
			node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !nodeReady(node) || node.Labels[kwoknode.ManagedLabel] != "true" || node.Status.NodeInfo.KubeletVersion != kwoknode.KubeletVersion {
				t.Errorf("node %s: Ready %v, labels %v, kubelet %q", name, nodeReady(node), node.Labels, node.Status.NodeInfo.KubeletVersion)
			}
		}
	})
	t.Run("leases renewed", func(t *testing.T) { kwokRenewsLeases(ctx, t, cs, k.Nodes) })
	t.Run("pods", func(t *testing.T) {
		l.kubectl(t, 0, "", "create", "namespace", "e2e-kwok")
		l.kubectl(t, 0, "", "-n", "e2e-kwok", "create", "deployment", "x", "--image=registry.k8s.io/pause:3.10", "--replicas=6")
		_, podNet, _ := net.ParseCIDR(kwoknode.NewOptions().PodCIDR)
		kwok := map[string]bool{}
		for _, n := range k.Nodes {
			kwok[n] = true
		}
		waitPods(ctx, t, cs, "e2e-kwok", "6 Running pods on kwok nodes with pod IPs", func(pods []corev1.Pod) bool {
			running := 0
			for _, p := range pods {
				if p.Status.Phase == corev1.PodRunning && kwok[p.Spec.NodeName] && podNet.Contains(net.ParseIP(p.Status.PodIP)) && podReady(&p) {
					running++
				}
			}
			return running == 6 && len(pods) == 6
		})
		l.kubectl(t, 0, "", "-n", "e2e-kwok", "scale", "deployment", "x", "--replicas=0")
		waitPods(ctx, t, cs, "e2e-kwok", "every pod deleted for good", func(pods []corev1.Pod) bool { return len(pods) == 0 })
	})
	t.Run("kwok log", func(t *testing.T) {
		log, err := os.ReadFile(k.Log)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(strings.ToLower(string(log)), "forbidden"); n > 0 {
			t.Errorf("kwok's log has %d forbidden answers: its ClusterRole misses a permission\n%s", n, tail(string(log), 2000))
		}
	})
	if err := l.stop(t); err != nil {
		t.Fatalf("local-up exited with %v after SIGINT\n%s", err, l.out())
	}
	nothingLeftRunning(t, l)
	if alive(k.PID) {
		t.Errorf("kwok (pid %d) still runs after local-up stopped", k.PID)
	}

	again := startLocalUp(t, "--data-dir="+dir, "--controllers=true", "--nodes=0", "--kwok-nodes=2", "--secure-port="+portOf(t, l))
	nodes, err := again.client(t, 0).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if strings.Join(names, ",") != "kwok-0,kwok-1" {
		t.Errorf("after a restart with --kwok-nodes=2 the nodes are %v, want kwok-0 and kwok-1", names)
	}
	if err := again.stop(t); err != nil {
		t.Fatalf("second run: local-up exited with %v after SIGINT\n%s", err, again.out())
	}
	if alive(again.ready.Kwok.PID) {
		t.Errorf("kwok (pid %d) still runs after the second stop", again.ready.Kwok.PID)
	}
}

// kwokRenewsLeases: every node's Lease is renewed again within 25 s (kwok
// renews every quarter of the 40 s duration).
func kwokRenewsLeases(ctx context.Context, t *testing.T, cs kubernetes.Interface, nodes []string) {
	first := map[string]time.Time{}
	for _, n := range nodes {
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of %s: %v", n, err)
		}
		if l.Spec.RenewTime == nil {
			t.Fatalf("lease of %s has no renew time", n)
		}
		first[n] = l.Spec.RenewTime.Time
	}
	wctx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	waitFor(wctx, t, "every kwok node's Lease renewed again", func() (bool, string) {
		var stale []string
		for _, n := range nodes {
			l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(first[n]) {
				stale = append(stale, n)
			}
		}
		return len(stale) == 0, fmt.Sprintf("not renewed yet: %v", stale)
	})
}

// waitPods waits until the pods of ns satisfy ok.
func waitPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, what string, ok func([]corev1.Pod) bool) {
	t.Helper()
	waitFor(ctx, t, what, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var states []string
		for _, p := range pods.Items {
			states = append(states, fmt.Sprintf("%s %s on %q ip %q", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP))
		}
		return ok(pods.Items), strings.Join(states, ", ")
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
