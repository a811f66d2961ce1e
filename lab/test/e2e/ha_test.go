package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHAControlPlane runs the seed bug's topology: a 3-member etcd and two
// kube-apiservers, each with its own kubeconfig, and a whole cluster on
// them: the controllers and two hollow nodes, one on each apiserver. A
// write through one apiserver must be visible to a consistent read through
// the other, and a Deployment must run on both nodes' kubelets.
func TestHAControlPlane(t *testing.T) {
	l := startLocalUp(t, "--etcd-members=3", "--apiservers=2", "--watch-cache-implementation="+implementations[0],
		"--controllers=true", "--nodes=2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if n := l.ready.Nodes; len(n) != 2 || n[0].APIServerURL == n[1].APIServerURL || n[1].APIServerURL != l.ready.APIServers[1].URL {
		t.Fatalf("hollow nodes %+v; want one on each apiserver", n)
	}
	if len(l.ready.Etcd.Endpoints) != 3 {
		t.Fatalf("ready file lists etcd endpoints %v, want 3", l.ready.Etcd.Endpoints)
	}
	first, second := l.client(t, 0), l.client(t, 1)
	if first == second {
		t.Fatal("both kubeconfigs gave the same client")
	}
	if h1, h2 := l.restConfig(t, 0).Host, l.restConfig(t, 1).Host; h1 == h2 {
		t.Fatalf("both apiservers serve %s; want two endpoints", h1)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ha", Namespace: "default"}, Data: map[string]string{"via": "first"}}
	if _, err := first.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := second.CoreV1().ConfigMaps("default").Get(ctx, "ha", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read through the second apiserver: %v", err)
	}
	if got.Data["via"] != "first" {
		t.Fatalf("second apiserver returned %v", got.Data)
	}
	list, err := second.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, item := range list.Items {
		found = found || item.Name == "ha"
	}
	if !found {
		t.Fatal("consistent list through the second apiserver misses a write acknowledged by the first")
	}
	deploymentRunsOnHollowNodes(ctx, t, l, "default")
	if err := l.stop(t); err != nil {
		t.Fatalf("local-up exited with %v after SIGINT\n%s", err, l.out())
	}
}

// TestDataSurvivesRestart stops local-up and starts it again on the same
// --data-dir: objects and the kubeconfig's credentials must still work.
func TestDataSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	l := startLocalUp(t, "--data-dir="+dir)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"}}
	if _, err := l.client(t, 0).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	oldClient := l.client(t, 0)
	if err := l.stop(t); err != nil {
		t.Fatalf("first run did not stop cleanly: %v\n%s", err, l.out())
	}

	again := startLocalUp(t, "--data-dir="+dir, "--secure-port="+portOf(t, l))
	if _, err := again.client(t, 0).CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("object written before the restart: %v", err)
	}
	// The client built from the first kubeconfig still authenticates.
	if _, err := oldClient.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("credentials from before the restart: %v", err)
	}
}
