package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/internal/freeport"
	"github.com/freshcache/freshcache/lab/pkg/localup"
)

// TestClusterRunsDeploymentOnHollowNodes is `make run` with no arguments:
// one apiserver, the controller-manager, the scheduler and two hollow
// nodes. A Deployment of 3 replicas must reach 3 Running pods on the
// hollow nodes, which takes every component: the deployment and replicaset
// controllers, the scheduler, the kubelets, and the service-account and
// root-CA controllers for the pods' token volumes.
func TestClusterRunsDeploymentOnHollowNodes(t *testing.T) {
	l := startLocalUp(t, "--controllers=true", "--nodes=2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := l.ready
	if r.ControllerManager == nil || r.Scheduler == nil || len(r.Nodes) != 2 {
		t.Fatalf("ready file lists controller-manager %v, scheduler %v and %d nodes; want both and 2", r.ControllerManager, r.Scheduler, len(r.Nodes))
	}
	t.Run("identities", func(t *testing.T) { componentsHaveTheirOwnIdentity(ctx, t, r) })
	t.Run("nodes", func(t *testing.T) { nodesReportTheServerVersion(ctx, t, l) })
	t.Run("deployment", func(t *testing.T) {
		l.kubectl(t, 0, "", "create", "namespace", "e2e-cluster")
		deploymentRunsOnHollowNodes(ctx, t, l, "e2e-cluster")
	})

	if err := l.stop(t); err != nil {
		t.Fatalf("local-up exited with %v after SIGINT\n%s", err, l.out())
	}
	nothingLeftRunning(t, l)
}

// componentsHaveTheirOwnIdentity asks the apiserver who each component's
// kubeconfig (kwok's too, with --kwok-nodes) authenticates as: its own
// user, never the admin.
func componentsHaveTheirOwnIdentity(ctx context.Context, t *testing.T, r *localup.ReadyFile) {
	type who struct {
		kubeconfig, user, group string
	}
	want := []who{
		{r.ControllerManager.Kubeconfig, "system:kube-controller-manager", ""},
		{r.Scheduler.Kubeconfig, "system:kube-scheduler", ""},
	}
	for _, n := range r.Nodes {
		want = append(want, who{n.Kubeconfig, "system:node:" + n.Name, "system:nodes"})
	}
	if r.Kwok != nil {
		want = append(want, who{r.Kwok.Kubeconfig, localup.KwokUser, ""})
	}
	for _, w := range want {
		cfg, err := clientcmd.BuildConfigFromFlags("", w.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: self subject review: %v", w.kubeconfig, err)
		}
		u := review.Status.UserInfo
		if u.Username != w.user {
			t.Errorf("%s authenticates as %q, want %q", w.kubeconfig, u.Username, w.user)
		}
		for _, g := range u.Groups {
			if g == "system:masters" {
				t.Errorf("%s is in system:masters; components must not run as admin", w.kubeconfig)
			}
		}
		if w.group != "" && !contains(u.Groups, w.group) {
			t.Errorf("%s is in groups %v, want %s", w.kubeconfig, u.Groups, w.group)
		}
	}
}

// nodesReportTheServerVersion: the hollow kubelets are built like the
// apiserver, so they report the same version (v1.37.2 with `make build`).
func nodesReportTheServerVersion(ctx context.Context, t *testing.T, l *localUp) {
	cs := l.client(t, 0)
	server, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range l.ready.Nodes {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := node.Status.NodeInfo.KubeletVersion; v != server.GitVersion {
			t.Errorf("node %s reports kubelet %s, the apiserver %s", n.Name, v, server.GitVersion)
		}
	}
}

// deploymentRunsOnHollowNodes creates, with kubectl as a user would, a
// Deployment of 3 pause pods in ns and waits until 3 of its pods are
// Running on hollow nodes.
func deploymentRunsOnHollowNodes(ctx context.Context, t *testing.T, l *localUp, ns string) {
	l.kubectl(t, 0, "", "-n", ns, "create", "deployment", "x", "--image=registry.k8s.io/pause:3.10", "--replicas=3")
	hollow := map[string]bool{}
	for _, n := range l.ready.Nodes {
		hollow[n.Name] = true
	}
	cs := l.client(t, 0)
	waitFor(ctx, t, "3 Running pods of deployment x on hollow nodes", func() (bool, string) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		var states []string
		for _, p := range pods.Items {
			states = append(states, fmt.Sprintf("%s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName))
			if p.Status.Phase == corev1.PodRunning && hollow[p.Spec.NodeName] {
				running++
			}
		}
		return running == 3, strings.Join(states, ", ")
	})
}

// nothingLeftRunning checks, after local-up stopped, that no process it
// listed is alive and that the hollow nodes' root directories are gone.
func nothingLeftRunning(t *testing.T, l *localUp) {
	t.Helper()
	r := l.ready
	pids := map[string]int{}
	for _, a := range r.APIServers {
		pids[a.Name] = a.PID
	}
	for _, c := range []*localup.ReadyProcess{r.ControllerManager, r.Scheduler} {
		if c != nil {
			pids[c.Name] = c.PID
		}
	}
	for _, n := range r.Nodes {
		pids[n.Name] = n.PID
		if n.RootDir == "" {
			t.Errorf("ready file has no root dir for node %s", n.Name)
		} else if _, err := os.Stat(n.RootDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("node %s's root dir %s is still there after the stop (%v)", n.Name, n.RootDir, err)
		}
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs after local-up stopped", name, pid)
		}
	}
	if _, err := os.Stat(localup.ReadyFilePath(l.dataDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ready file still there after the stop (%v)", err)
	}
}

// alive reports whether pid is a running process (not a zombie: local-up
// reaps its children, and an unrelated process that reused the pid would
// not be ours, so the command line is checked too).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) > 0 && fields[0] == "Z" {
		return false
	}
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.Contains(string(cmdline), binDir)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestLocalUpStopsEverythingWhenANodeFails: a hollow node that exits during
// start-up fails the run with its name and log, and local-up stops the
// apiserver and etcd it had started.
func TestLocalUpStopsEverythingWhenANodeFails(t *testing.T) {
	dir := t.TempDir()
	port, err := freeport.Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// /bin/false is a "kubemark" that exits at once with status 1.
	out, err := exec.CommandContext(ctx, bin("local-up"), "--data-dir="+dir, "--secure-port="+strconv.Itoa(port),
		"--etcd-client-port=0", "--etcd-peer-port=0", "--kube-apiserver="+bin("kube-apiserver"),
		"--controllers=false", "--nodes=1", "--kubemark=/bin/false").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("local-up with a failing node: err=%v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(string(out), "hollow-0") || !strings.Contains(string(out), "exit status 1") {
		t.Fatalf("local-up does not say which node failed and how:\n%s", out)
	}
	if err := freeport.Check("127.0.0.1", port); err != nil {
		t.Fatalf("the apiserver's port %d is still taken after local-up failed: %v", port, err)
	}
	if _, err := os.Stat(localup.ReadyFilePath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed run left a ready file (%v)", err)
	}
}
