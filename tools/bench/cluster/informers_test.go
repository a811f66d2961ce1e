package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
)

// TestNodeInformerChildStorm runs the informer child in node mode against
// local-up with kwok nodes (real apiserver and etcd): one pod watch per
// node must see exactly its node's pods, and a storm must restart all of
// them and report each one's sync, twice in a row.
func TestNodeInformerChildStorm(t *testing.T) {
	binDir := os.Getenv("FRESHCACHE_BIN_DIR")
	if binDir == "" {
		t.Skip("needs the built local-up, kube-apiserver and kwok: FRESHCACHE_BIN_DIR (make test-bench)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const nodes, podsPerNode = 4, 3
	lu, err := launch.Start(ctx, launch.Options{BinDir: binDir, DataDir: t.TempDir(), Args: []string{"--controllers=false", "--nodes=0", fmt.Sprintf("--kwok-nodes=%d", nodes)}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lu.Stop(0) }()
	rc, err := clientcmd.BuildConfigFromFlags("", lu.Ready.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for n := range nodes {
		for i := range podsPerNode {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d-%d", n, i)},
				Spec: corev1.PodSpec{
					NodeName:   lu.Ready.Kwok.Nodes[n],
					Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			}
			if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	cfg := InformerChildConfig{Kubeconfig: lu.Ready.Kubeconfig, WatchListClient: true, NodePrefix: "kwok-", NodeCount: nodes}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- RunInformerChild(ctx, cfg, inR, outW); _ = outW.Close() }()
	lines := bufio.NewScanner(outR)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the child stopped writing: %v", lines.Err())
		}
		return lines.Text()
	}
	if l := next(); l != informerReady {
		t.Fatalf("first line %q, want %q", l, informerReady)
	}
	for storm := 1; storm <= 2; storm++ {
		if _, err := io.WriteString(inW, stormCommand+"\n"); err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(next(), stormSynced+" ")
		if !ok {
			t.Fatalf("storm %d: no %s line", storm, stormSynced)
		}
		var st StormChildStats
		if err := json.Unmarshal([]byte(rest), &st); err != nil {
			t.Fatal(err)
		}
		if st.Informers != nodes || len(st.SyncMs) != nodes || st.Seconds <= 0 {
			t.Errorf("storm %d: %+v, want %d informers each with a sync time", storm, st, nodes)
		}
		var sent int64
		for k, v := range st.Requests {
			if k != status429 {
				sent += v
			}
		}
		if sent < nodes {
			t.Errorf("storm %d: %d pod requests counted (%v), want at least one per informer", storm, sent, st.Requests)
		}
	}
	_ = inW.Close()
	var final InformerStats
	if err := json.Unmarshal([]byte(next()), &final); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Three syncs per informer (start, two storms); each sync adds its
	// node's pods, and only those: kwok's status updates may add updates.
	if final.CPUSeconds <= 0 {
		t.Errorf("the child reports no CPU of its own: %+v", final)
	}
	if !final.PerNode || final.Informers != nodes || final.Syncs != 3*nodes {
		t.Errorf("final stats %+v, want %d per-node informers with 3 syncs each", final, nodes)
	}
	if min := int64(3 * nodes * podsPerNode); final.Events < min {
		t.Errorf("%d events, want at least %d (every node's pods added at each sync)", final.Events, min)
	}
	if max := int64(3*nodes*podsPerNode) + int64(nodes*podsPerNode)*4; final.Events > max {
		t.Errorf("%d events, more than %d: an informer saw pods of other nodes", final.Events, max)
	}
}
