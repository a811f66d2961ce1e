package hollownodes

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
	"github.com/freshcache/freshcache/tools/bench/ctxsleep"
	"github.com/freshcache/freshcache/tools/bench/procfs"
)

// Config is one hollow-node cost run: one local-up per node
// count, measured idle and then while pods are deleted (and recreated by
// their ReplicaSet) at a steady rate.
type Config struct {
	BinDir string
	Nodes  []int
	// Settle is the pause after local-up is ready, before the idle window:
	// kubelets and controllers do their start-up work first.
	Settle time.Duration
	Window time.Duration
	// PodsPerNode sizes the churn Deployment; DeletesPerSec is the churn.
	PodsPerNode   int
	DeletesPerSec float64
	DataDir       string
	Progress      io.Writer
}

// Row is one node count's result.
type Row struct {
	Nodes int
	// Ready is local-up's start until its ready file (all nodes Ready).
	Ready time.Duration
	// Node* are per hollow node: mean and max RSS, mean anonymous RSS
	// (RssAnon: what another node adds; the rest of RSS is the kubemark
	// binary's pages, shared by all nodes), mean CPU in millicores.
	NodeRSSMeanMB, NodeRSSMaxMB             float64
	NodeAnonMB                              float64
	NodeCPUIdleM, NodeCPUChurnM             float64
	ControlCPUIdleM, ControlCPUChurnM       float64 // apiserver + controllers + local-up (etcd)
	ControlRSSMB                            float64
	MachineIdleIdlePct, MachineIdleChurnPct float64 // share of both cores idle
	MemAvailableMB                          float64 // at the end of the idle window
	PodsRunning                             int     // Running churn pods at the end
	Deleted                                 int
}

// Measure runs every node count in turn.
func Measure(ctx context.Context, cfg Config) ([]Row, error) {
	var rows []Row
	for _, n := range cfg.Nodes {
		row, err := measure(ctx, cfg, n)
		if err != nil {
			return rows, fmt.Errorf("hollownodes: %d hollow nodes: %w", n, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func measure(ctx context.Context, cfg Config, nodes int) (row Row, err error) {
	row.Nodes = nodes
	dir := filepath.Join(cfg.DataDir, fmt.Sprintf("nodes-%d", nodes))
	began := time.Now()
	lu, err := launch.Start(ctx, launch.Options{BinDir: cfg.BinDir, DataDir: dir, Args: []string{"--controllers=true", "--nodes=" + strconv.Itoa(nodes), "--ready-timeout=10m"}})
	if err != nil {
		return row, err
	}
	defer func() { _ = lu.Stop(0) }()
	row.Ready = time.Since(began)
	fmt.Fprintf(cfg.Progress, "# %d nodes ready in %s\n", nodes, row.Ready.Round(time.Second))
	rc, err := clientcmd.BuildConfigFromFlags("", lu.Ready.Kubeconfig)
	if err != nil {
		return row, err
	}
	rc.QPS, rc.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return row, err
	}
	var nodePIDs, controlPIDs []int
	for _, n := range lu.Ready.Nodes {
		nodePIDs = append(nodePIDs, n.PID)
	}
	controlPIDs = append(controlPIDs, lu.Ready.PID)
	for _, a := range lu.Ready.APIServers {
		controlPIDs = append(controlPIDs, a.PID)
	}
	for _, p := range []*localup.ReadyProcess{lu.Ready.ControllerManager, lu.Ready.Scheduler} {
		controlPIDs = append(controlPIDs, p.PID)
	}

	if err := ctxsleep.Sleep(ctx, cfg.Settle); err != nil {
		return row, err
	}
	idle, err := sampleWindow(ctx, cfg.Window, nodePIDs, controlPIDs, nil)
	if err != nil {
		return row, err
	}
	row.NodeCPUIdleM, row.ControlCPUIdleM, row.MachineIdleIdlePct = idle.nodeCPU, idle.controlCPU, idle.machineIdle
	row.NodeRSSMeanMB, row.NodeRSSMaxMB, row.NodeAnonMB, row.ControlRSSMB = idle.nodeRSSMean, idle.nodeRSSMax, idle.nodeAnon, idle.controlRSS
	row.MemAvailableMB = procfs.MemAvailableMB()
	fmt.Fprintf(cfg.Progress, "# %d nodes idle: %.0f MB/node (%.0f MB anon), %.1f mCPU/node, machine %.0f%% idle\n", nodes, row.NodeRSSMeanMB, row.NodeAnonMB, row.NodeCPUIdleM, row.MachineIdleIdlePct)

	// Churn: a Deployment of PodsPerNode pods per node, then pods deleted
	// at random at a steady rate, each one replaced by the ReplicaSet,
	// scheduled, started by a kubelet and killed by another.
	replicas := int32(cfg.PodsPerNode * nodes)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "churn"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "churn"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "churn"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return row, err
	}
	if err := waitRunning(ctx, cs, int(replicas), 5*time.Minute); err != nil {
		return row, err
	}
	deleted := 0
	churn := func(ctx context.Context) {
		tick := time.NewTicker(time.Duration(float64(time.Second) / cfg.DeletesPerSec))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=churn", ResourceVersion: "0"})
			if err != nil || len(pods.Items) == 0 {
				continue
			}
			p := pods.Items[rand.IntN(len(pods.Items))]
			if cs.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}) == nil {
				deleted++
			}
		}
	}
	busy, err := sampleWindow(ctx, cfg.Window, nodePIDs, controlPIDs, churn)
	if err != nil {
		return row, err
	}
	row.Deleted = deleted
	row.NodeCPUChurnM, row.ControlCPUChurnM, row.MachineIdleChurnPct = busy.nodeCPU, busy.controlCPU, busy.machineIdle
	row.PodsRunning = countRunning(ctx, cs)
	fmt.Fprintf(cfg.Progress, "# %d nodes churn: %d deleted, %.1f mCPU/node, machine %.0f%% idle\n", nodes, deleted, row.NodeCPUChurnM, row.MachineIdleChurnPct)
	return row, nil
}

type window struct {
	nodeCPU, controlCPU                 float64 // millicores; nodeCPU per node
	nodeRSSMean, nodeRSSMax, controlRSS float64 // MB
	nodeAnon                            float64 // MB, mean RssAnon
	machineIdle                         float64 // percent
}

// sampleWindow measures CPU over d from /proc (and runs work meanwhile,
// when given), and RSS at its end.
func sampleWindow(ctx context.Context, d time.Duration, nodes, control []int, work func(context.Context)) (window, error) {
	var w window
	n0, c0 := procfs.CPUTicks(nodes), procfs.CPUTicks(control)
	idle0, total0 := procfs.MachineTicks()
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if work != nil {
		work(wctx)
	}
	<-wctx.Done()
	if ctx.Err() != nil {
		return w, ctx.Err()
	}
	secs := time.Since(start).Seconds()
	n1, c1 := procfs.CPUTicks(nodes), procfs.CPUTicks(control)
	idle1, total1 := procfs.MachineTicks()
	w.nodeCPU = (n1 - n0) / procfs.ClockTicksPerSec / secs * 1000 / float64(max(len(nodes), 1))
	w.controlCPU = (c1 - c0) / procfs.ClockTicksPerSec / secs * 1000
	if total1 > total0 {
		w.machineIdle = 100 * (idle1 - idle0) / (total1 - total0)
	}
	var sum, anon float64
	for _, p := range nodes {
		r := procfs.RSSMB(p)
		sum += r
		anon += procfs.StatusMB(p, "RssAnon:")
		w.nodeRSSMax = max(w.nodeRSSMax, r)
	}
	w.nodeRSSMean = sum / float64(max(len(nodes), 1))
	w.nodeAnon = anon / float64(max(len(nodes), 1))
	for _, p := range control {
		w.controlRSS += procfs.RSSMB(p)
	}
	return w, nil
}

func countRunning(ctx context.Context, cs kubernetes.Interface) int {
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=churn"})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func waitRunning(ctx context.Context, cs kubernetes.Interface, want int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		n := countRunning(ctx, cs)
		if n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d churn pods Running after %s: %w", n, want, timeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// WriteMarkdown writes the rows as a table.
func WriteMarkdown(w io.Writer, cfg Config, rows []Row) error {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Nodes < rows[j].Nodes })
	var b strings.Builder
	fmt.Fprintf(&b, "Each row: local-up with the controller-manager, the scheduler and N hollow nodes; %s to settle, %s idle, then %s while %.1f pods/s of a %d-pods-per-node Deployment are deleted (the ReplicaSet replaces each). CPU in millicores (1000 = one core), from /proc utime+stime; RSS from VmRSS at the end of the idle window, and its anonymous part (RssAnon), which is what one more node adds: the rest is the kubemark binary's file pages, shared by every node. \"control plane\" is kube-apiserver, kube-controller-manager, kube-scheduler and local-up (which runs etcd in-process).\n\n",
		cfg.Settle, cfg.Window, cfg.Window, cfg.DeletesPerSec, cfg.PodsPerNode)
	b.WriteString("| nodes | ready after | RSS/node MB (mean, max) | anon RSS/node MB | CPU/node idle | CPU/node churn | control plane CPU idle | control plane CPU churn | control plane RSS MB | machine idle (idle, churn) | MemAvailable MB | pods deleted, Running at end |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %.0f, %.0f | %.0f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f%%, %.0f%% | %.0f | %d, %d |\n",
			r.Nodes, r.Ready.Round(time.Second), r.NodeRSSMeanMB, r.NodeRSSMaxMB, r.NodeAnonMB, r.NodeCPUIdleM, r.NodeCPUChurnM,
			r.ControlCPUIdleM, r.ControlCPUChurnM, r.ControlRSSMB, r.MachineIdleIdlePct, r.MachineIdleChurnPct, r.MemAvailableMB, r.Deleted, r.PodsRunning)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
