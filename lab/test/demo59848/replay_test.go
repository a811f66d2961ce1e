package demo59848

// What the hollow and the real replay share: the cluster (etcd behind
// fault proxies, A and B pinned to members 0 and 1, B's audit log), the
// cut of B's member, and reading what the restarted kubelet asked B.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/test/robustness"
)

// replayCluster is one trial's control plane.
type replayCluster struct {
	etcd     *robustness.Cluster
	lc       *localup.Cluster
	a, b     kubernetes.Interface
	auditLog string
}

// startReplay starts the trial's etcd and local-up: A on member 0, B on
// member 1 with an audit log of the requests of nodeName's kubelet, both
// with v's flags. nodes sets the trial's own options (nodes, binaries,
// data directory). Everything stops when the test ends.
func startReplay(ctx context.Context, t *testing.T, dir, binDir string, v variant, nodeName string, nodes func(*localup.Options)) *replayCluster {
	t.Helper()
	cl, err := robustness.StartCluster(ctx, filepath.Join(dir, "etcd"), uint64(time.Now().UnixNano()))
	if err != nil {
		t.Fatalf("etcd: %v", err)
	}
	t.Cleanup(cl.Close)

	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy(nodeName)), 0o644); err != nil {
		t.Fatal(err)
	}
	rc := &replayCluster{etcd: cl, auditLog: filepath.Join(dir, "audit-b.log")}
	o := localup.NewOptions()
	o.DataDir = filepath.Join(dir, "local-up")
	o.EtcdServers = cl.Endpoints()
	o.APIServers = 2
	o.SecurePort = 0 // local-up picks both apiservers' ports
	o.APIServerEtcdServers = [][]string{{cl.ProxiedClientURL(0)}, {cl.ProxiedClientURL(1)}}
	o.APIServerArgs = [][]string{nil, {
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + rc.auditLog,
		"--audit-log-format=json",
		// One line per event as it happens: the test reads the file while
		// B runs.
		"--audit-log-mode=blocking",
	}}
	o.PassThrough = v.args
	o.Binary = filepath.Join(binDir, "kube-apiserver")
	o.ControllerManagerBinary = filepath.Join(binDir, "kube-controller-manager")
	o.SchedulerBinary = filepath.Join(binDir, "kube-scheduler")
	o.ShutdownGrace = 10 * time.Second
	nodes(o)
	log, err := os.Create(filepath.Join(dir, "local-up.out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	lc, err := localup.Start(ctx, o, io.MultiWriter(log, testWriter{t}))
	if err != nil {
		t.Fatalf("local-up: %v", err)
	}
	// Cleanups run last-in first-out: local-up stops before etcd.
	t.Cleanup(lc.Stop)
	rc.lc = lc
	rc.a = clientset(t, lc, 0)
	rc.b = clientset(t, lc, 1)
	return rc
}

// waitBHolds waits until B answers an rv=0 LIST (what the kubelet falls
// back to) with a Running pod that match accepts.
func (rc *replayCluster) waitBHolds(ctx context.Context, t *testing.T, what string, match func(*corev1.Pod) bool) {
	t.Helper()
	waitFor(ctx, t, "B's cache to hold "+what, func() (bool, string) {
		l, err := rc.b.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		for i := range l.Items {
			if p := &l.Items[i]; match(p) && p.Status.Phase == corev1.PodRunning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods", len(l.Items))
	})
}

// child is the restarted kubelet's process, hollow or real.
type child interface {
	Done() <-chan struct{}
	ExitError() error
	TailLog(lines int) string
}

// observeKubelet calls probe once a second for the observe period. It
// fails the test if the kubelet exits or ctx ends first.
func observeKubelet(ctx context.Context, t *testing.T, kubelet child, probe func()) {
	t.Helper()
	deadline := time.NewTimer(observe)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-kubelet.Done():
			t.Fatalf("the restarted kubelet exited: %v\n%s", kubelet.ExitError(), kubelet.TailLog(20))
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-deadline.C:
			return
		case <-tick.C:
		}
		probe()
	}
}

// cutB isolates member 1 from its peers, after making sure it is a
// follower: an isolated leader steps down, but until then it could still
// be the one that commits the delete.
func (rc *replayCluster) cutB(ctx context.Context, t *testing.T) {
	t.Helper()
	cl := rc.etcd
	if cl.Leader() == 1 {
		if err := cl.MoveLeader(ctx, 0); err != nil {
			t.Fatalf("moving leadership off member 1: %v", err)
		}
	}
	waitFor(ctx, t, "a leader other than member 1", func() (bool, string) {
		l := cl.Leader()
		return l >= 0 && l != 1, fmt.Sprintf("leader %d", l)
	})
	cl.Isolate(1)
	t.Logf("member 1 isolated from its peers (leader: member %d)", cl.Leader())
}

// kubeletRoute stops the cluster, so that every request B still held is
// complete in its audit log, and sums up the pods and nodes requests that
// nodeName's kubelet sent B since restarted.
func (rc *replayCluster) kubeletRoute(t *testing.T, nodeName string, restarted time.Time) string {
	t.Helper()
	rc.lc.Stop()
	user := localup.NodeUser(nodeName)
	pods, err := readAudit(rc.auditLog, user, "pods", restarted)
	if err != nil {
		t.Fatalf("B's audit log: %v", err)
	}
	nodes, err := readAudit(rc.auditLog, user, "nodes", restarted)
	if err != nil {
		t.Fatalf("B's audit log: %v", err)
	}
	if len(pods)+len(nodes) == 0 {
		// The audit log works (the old kubelet's requests are in it), so
		// the new kubelet reached B with nothing at all.
		t.Errorf("neither a pods nor a nodes request from the restarted kubelet in B's audit log")
	}
	for _, r := range append(nodes, pods...) {
		t.Logf("B <- %s at +%s: %s", user, r.received.Sub(restarted).Round(100*time.Millisecond), r)
	}
	route := "pods: " + path(pods)
	if len(pods) == 0 {
		route = "pods: none (the kubelet lists its pods once its node informer has synced)"
	}
	return route + " | nodes: " + path(nodes)
}
