package cluster

// One cell of the cluster benchmark: start local-up, roll the Deployments
// out, start the informer children, run the churn (warm-up, then the
// measured window with the LIST clients and the probe), then measure the
// idle cluster and each read kind alone.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
	"github.com/freshcache/freshcache/tools/bench/ctxsleep"
	"github.com/freshcache/freshcache/tools/bench/procfs"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// clusterClient is one client of one apiserver, on connections of its own.
type clusterClient struct {
	cs   *kubernetes.Clientset
	http *servermetrics.Client
}

// newClusterClient builds a client from kubeconfig. A Dial of its own
// keeps client-go from sharing a cached transport with the other clients
// of the process, so the probe's reader and writer, and the LIST clients,
// do not queue behind one another on one connection.
func newClusterClient(kubeconfig string) (*clusterClient, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	h, err := servermetrics.NewClient(rest.CopyConfig(rc))
	if err != nil {
		return nil, err
	}
	return &clusterClient{cs: cs, http: h}, nil
}

func runCell(ctx context.Context, cfg Config, c cell) (row Row, err error) {
	row = Row{Config: c.config, Mode: c.mode, Nodes: c.nodes, Repeat: c.repeat, Seed: cfg.Seed, WarmupSeconds: cfg.Warmup.Seconds(), FreshWaitMetric: servermetrics.WaitMetric(clusterImpl(c.config))}
	dir := cellDir(cfg.DataDir, c)
	began := time.Now()
	lu, err := launch.Start(ctx, launch.Options{BinDir: cfg.BinDir, DataDir: dir, Args: cfg.localUpArgs(c)})
	if err != nil {
		return row, err
	}
	defer func() { _ = lu.Stop(0) }()
	etcdURL := ""
	if len(lu.Ready.Etcd.Endpoints) > 0 {
		etcdURL = lu.Ready.Etcd.Endpoints[0]
	}
	row.ReadySeconds = time.Since(began).Seconds()
	fmt.Fprintf(cfg.Progress, "#   local-up ready in %.0fs\n", row.ReadySeconds)

	var apis []*clusterClient
	var kubeconfigs []string
	probe := &clusterProbe{impl: clusterImpl(c.config), etcdPID: lu.Ready.PID, etcdURL: etcdURL, etcdHTTP: &http.Client{}}
	for _, a := range lu.Ready.APIServers {
		cl, err := newClusterClient(a.Kubeconfig)
		if err != nil {
			return row, err
		}
		apis = append(apis, cl)
		kubeconfigs = append(kubeconfigs, a.Kubeconfig)
		probe.apis = append(probe.apis, cl.http)
		probe.apiPIDs = append(probe.apiPIDs, a.PID)
	}
	var nodes []string
	for _, n := range lu.Ready.Nodes {
		nodes = append(nodes, n.Name)
	}
	if lu.Ready.Kwok != nil {
		nodes = append(nodes, lu.Ready.Kwok.Nodes...)
	}

	// Set-up: the Deployments and the probe pod, through apiserver 1 (the
	// controllers' apiserver).
	sizes := deploymentSizes(cfg.PodsPerNode*c.nodes, cfg.ReplicasPerDeployment)
	for _, s := range sizes {
		row.Pods += int(s)
	}
	t0 := time.Now()
	setupCtx, cancelSetup := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancelSetup()
	if err := setupWorkload(setupCtx, apis[0].cs, sizes, cfg.SetupInflightPods, cfg.Progress); err != nil {
		return row, fmt.Errorf("after %s: %w", time.Since(t0).Round(time.Second), err)
	}
	if row.PodsRunning, err = waitDeployments(setupCtx, apis[0].cs, cfg.ReadyTimeout); err != nil {
		return row, err
	}
	row.SetupSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(cfg.Progress, "#   %d pods in %d Deployments running after %.0fs\n", row.PodsRunning, len(sizes), row.SetupSeconds)

	pw, err := startPodWatch(ctx, apis[0].cs)
	if err != nil {
		return row, err
	}
	defer pw.close()

	children, err := startInformers(ctx, cfg, kubeconfigs, nodes, dir)
	defer func() {
		stats, serr := stopInformers(children)
		row.Informers = stats
		if err == nil {
			err = serr
		}
	}()
	if err != nil {
		return row, err
	}

	// The load: churn from now, over the warm-up and the window; the
	// readers and the probe over the window only.
	schedule := churnSchedule(churnPlan{Seed: cfg.Seed, Replicas: sizes, PodRate: cfg.PodRate, Duration: cfg.Warmup + cfg.Window})
	row.ChurnPlanned = len(schedule)
	for _, a := range schedule {
		row.ChurnPlannedPods += a.Pods
	}
	loadCtx, cancelLoad := context.WithCancel(ctx)
	defer cancelLoad()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); row.Churn = runChurn(loadCtx, apis[0].cs, schedule) }()
	if err := ctxsleep.Sleep(ctx, cfg.Warmup); err != nil {
		return row, err
	}

	before, err := probe.sample(ctx)
	if err != nil {
		return row, err
	}
	profiles := startWindowProfiles(ctx, cfg, probe.apis)
	defer profiles.stop()
	end := time.Now().Add(cfg.Window)
	target := readTarget{nodes: nodes}
	for _, a := range apis {
		target.clients = append(target.clients, a.cs)
	}
	kinds := clusterReadKinds(cfg)
	row.Reads = make([]ReadStats, len(kinds))
	for i, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row.Reads[i] = target.runReads(ctx, end, k.kind, k.rv, k.rate, cfg.Seed+uint64(i))
		}()
	}
	writer, reader, through := apis[0].cs, apis[len(apis)-1].cs, "written through kube-apiserver-1, read through kube-apiserver-2"
	if len(apis) == 1 {
		second, err := newClusterClient(kubeconfigs[0])
		if err != nil {
			return row, err
		}
		reader, through = second.cs, "written and read through kube-apiserver-1, by two clients"
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		row.Probe = runProbe(ctx, end, writer, reader, cfg.ProbeRate, through, len(apis) > 1)
	}()
	rssCtx, cancelRSS := context.WithDeadline(ctx, end)
	defer cancelRSS()
	peaks := make(chan []float64, 1)
	go func() {
		peaks <- peakRSS(rssCtx, append(append([]int(nil), probe.apiPIDs...), probe.etcdPID), time.Second)
	}()
	if err := ctxsleep.Sleep(ctx, time.Until(end)); err != nil {
		return row, err
	}
	after, err := probe.sample(ctx)
	if err != nil {
		return row, err
	}
	windowStart, windowEnd := before.at, after.at
	cancelLoad()
	wg.Wait()
	peak := <-peaks
	row.APIPeakRSSMB, row.EtcdPeakRSSMB = peak[:len(apis)], peak[len(apis)]
	for _, p := range probe.apiPIDs {
		row.APIHWMMB = append(row.APIHWMMB, procfs.StatusMB(p, "VmHWM:"))
	}
	row.fillWindow(diffSamples(before, after))
	for i, p := range probe.apiPIDs {
		if !procfs.Alive(p) {
			return row, fmt.Errorf("cluster: kube-apiserver-%d (pid %d) is gone; its log: %s", i+1, p, lu.Ready.APIServers[i].Log)
		}
	}
	profiles.collect(&row, dir)
	if cfg.Storm {
		var stormed []*informerChild
		for _, ch := range children {
			if ch.perNode {
				stormed = append(stormed, ch)
			}
		}
		fmt.Fprintf(cfg.Progress, "#   restart storm of %d node watches\n", len(nodes))
		if row.Storm, err = runStorm(ctx, stormed, probe, cfg.StormTimeout); err != nil {
			return row, err
		}
		fmt.Fprintf(cfg.Progress, "#   storm: all synced after %.1fs, sync p99 %.0f ms, %.0f etcd requests\n", row.Storm.Seconds, row.Storm.SyncP99Ms, row.Storm.EtcdRequests)
	}

	// After the window: let the Deployments settle, then the idle cluster
	// and each read kind alone on apiserver 1.
	if _, err := waitDeployments(ctx, apis[0].cs, cfg.ReadyTimeout); err != nil {
		row.Notes = append(row.Notes, fmt.Sprintf("Deployments still rolling at the calibration: %v", err))
	}
	row.PodLatency = pw.latency(windowStart, windowEnd)
	row.PodsCreated, row.PodsDeleted = pw.counts(windowStart, windowEnd)
	row.Idle, row.Calibration, err = calibrate(ctx, cfg, probe, readTarget{clients: []kubernetes.Interface{apis[0].cs}, nodes: nodes})
	return row, err
}

// clusterRead is one kind of the LIST clients' reads, at its rate.
type clusterRead struct {
	kind, rv string
	rate     float64
}

func clusterReadKinds(cfg Config) []clusterRead {
	return []clusterRead{
		{readListNode, rvConsistent, cfg.NodeListRate}, {readListNode, rvZero, cfg.NodeListRate},
		{readListAll, rvConsistent, cfg.AllListRate}, {readListAll, rvZero, cfg.AllListRate},
	}
}

// calibrationKinds are the read kinds whose cost the cost model uses.
func calibrationKinds(cfg Config) []clusterRead {
	return []clusterRead{
		{readListNode, rvConsistent, cfg.CalibRate}, {readListNode, rvZero, cfg.CalibRate},
		{readListAll, rvConsistent, cfg.CalibListAllRate}, {readListAll, rvZero, cfg.CalibListAllRate},
		{readGet, rvConsistent, cfg.CalibRate}, {readGet, rvZero, cfg.CalibRate},
	}
}

// calibrate measures the idle cluster for CalibWindow, then each
// calibration kind alone for CalibWindow, and charges each kind what the
// servers did beyond the idle rates.
func calibrate(ctx context.Context, cfg Config, probe *clusterProbe, target readTarget) (IdleRates, []CalibRow, error) {
	var idle IdleRates
	s0, err := probe.sample(ctx)
	if err != nil {
		return idle, nil, err
	}
	if err := ctxsleep.Sleep(ctx, cfg.CalibWindow); err != nil {
		return idle, nil, err
	}
	s1, err := probe.sample(ctx)
	if err != nil {
		return idle, nil, err
	}
	d := diffSamples(s0, s1)
	idle = IdleRates{Seconds: d.Seconds, APICPUPerSec: d.APICPUSec / d.Seconds, EtcdCPUPerSec: d.EtcdCPUSec / d.Seconds, EtcdReadsPerSec: d.etcdReads() / d.Seconds}
	var rows []CalibRow
	for i, k := range calibrationKinds(cfg) {
		b, err := probe.sample(ctx)
		if err != nil {
			return idle, rows, err
		}
		st := target.runReads(ctx, time.Now().Add(cfg.CalibWindow), k.kind, k.rv, k.rate, cfg.Seed+100+uint64(i))
		a, err := probe.sample(ctx)
		if err != nil {
			return idle, rows, err
		}
		rows = append(rows, calibRow(k, st, diffSamples(b, a), idle))
	}
	return idle, rows, nil
}

// calibRow charges one kind's window, less the idle rates over its
// length, to its answered requests.
func calibRow(k clusterRead, st ReadStats, d windowDelta, idle IdleRates) CalibRow {
	r := CalibRow{Kind: k.kind, RV: k.rv, Requests: st.OK, Errors: st.Errors, Items: st.Items, P99Ms: st.P99Ms}
	if st.OK == 0 {
		return r
	}
	n := float64(st.OK)
	r.APICPUMsPerReq = (d.APICPUSec - idle.APICPUPerSec*d.Seconds) * 1000 / n
	r.EtcdCPUMsPerReq = (d.EtcdCPUSec - idle.EtcdCPUPerSec*d.Seconds) * 1000 / n
	r.EtcdReadsPerReq = (d.etcdReads() - idle.EtcdReadsPerSec*d.Seconds) / n
	return r
}

// setupWorkload creates the namespace, its default service account (so
// that pods are admitted before the controller makes it), the probe pod
// and the Deployments. The Deployments go in waves: one is created only
// while the pods created and not yet Running, its own included, stay
// within inflight (0: all at once). 3,000 pods at once on 100 hollow nodes
// put the whole control plane at this machine's edge before the window
// began, and a cell could then miss its ready timeout; a paced rollout
// keeps the set-up load bounded without touching the measured window.
func setupWorkload(ctx context.Context, cs kubernetes.Interface, sizes []int32, inflight int, progress io.Writer) error {
	ignoreExists := func(err error) error {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	if _, err := cs.CoreV1().ServiceAccounts(clusterNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	if _, err := cs.CoreV1().Pods(clusterNamespace).Create(ctx, probePod(), metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	created, createdPods, running := 0, 0, 0
	for created < len(sizes) {
		n := setupWave(sizes[created:], createdPods-running, inflight)
		for _, size := range sizes[created : created+n] {
			if _, err := cs.AppsV1().Deployments(clusterNamespace).Create(ctx, churnDeployment(created, size), metav1.CreateOptions{}); ignoreExists(err) != nil {
				return err
			}
			created++
			createdPods += int(size)
		}
		if created == len(sizes) {
			break
		}
		if n > 0 && progress != nil {
			fmt.Fprintf(progress, "#   %d of %d Deployments created, %d of %d pods Running\n", created, len(sizes), running, createdPods)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Deployments created, %d of %d pods Running: %w", created, len(sizes), running, createdPods, ctx.Err())
		case <-tick.C:
		}
		if r, err := countRunningIn(ctx, cs); err == nil {
			running = r
		}
	}
	return nil
}

// setupWave is how many of the next Deployments (their sizes) to create
// now, with pending pods created and not yet Running: as many as keep
// pending within inflight, and always one when none is pending, so that a
// Deployment larger than inflight is still created. inflight 0 creates
// them all.
func setupWave(next []int32, pending, inflight int) int {
	if inflight <= 0 {
		return len(next)
	}
	n := 0
	for _, size := range next {
		if pending > 0 && pending+int(size) > inflight {
			break
		}
		pending += int(size)
		n++
	}
	return n
}

// waitDeployments waits until every Deployment is rolled out (updated,
// available and no more pods than it wants) and as many of their pods
// Running as they want, and returns the Running pods. A rolled-out
// Deployment is not enough here: a hollow kubelet reports a pod Ready
// while it is still Pending (ContainerCreating in the fake runtime).
func waitDeployments(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	last := ""
	for {
		l, err := cs.AppsV1().Deployments(clusterNamespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			pending, want := 0, 0
			for i := range l.Items {
				want += int(ptr.Deref(l.Items[i].Spec.Replicas, 1))
				if !rolledOut(&l.Items[i]) {
					pending++
				}
			}
			running, rerr := countRunningIn(ctx, cs)
			switch {
			case rerr != nil:
				last = rerr.Error()
			case pending == 0 && running >= want:
				return running, nil
			default:
				last = fmt.Sprintf("%d of %d Deployments not rolled out, %d of %d pods Running", pending, len(l.Items), running, want)
			}
		} else if ctx.Err() == nil || last == "" {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("after %s: %s", timeout.Round(time.Second), last)
		case <-tick.C:
		}
	}
}

func rolledOut(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}

func countRunningIn(ctx context.Context, cs kubernetes.Interface) (int, error) {
	l, err := cs.CoreV1().Pods(clusterNamespace).List(ctx, metav1.ListOptions{LabelSelector: churnLabel})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range l.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// startInformers starts the informer children: for each WatchListClient
// value and each apiserver one child, the informers split evenly; with
// NodeWatches, as many children again, the nodes split evenly among them
// in contiguous ranges.
func startInformers(ctx context.Context, cfg Config, kubeconfigs, nodes []string, dir string) ([]*informerChild, error) {
	self := cfg.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	var out []*informerChild
	slots := 2 * len(kubeconfigs)
	// startSplit starts one child per slot (WatchListClient on and off
	// for each apiserver) for an even share of total, the shares in
	// order; child says what the child with items [first, first+n) runs,
	// and the name of its log.
	startSplit := func(total int, child func(kubeconfig string, gate bool, first, n int) InformerChildConfig, logName string) error {
		first := 0
		for s := range slots {
			n := total/slots + btoi(s < total%slots)
			if n == 0 {
				continue
			}
			gate, api := s%2 == 0, s/2
			cc := child(kubeconfigs[api], gate, first, n)
			first += n
			log := filepath.Join(dir, "logs", fmt.Sprintf("%s-%d-watchlist-%v.log", logName, api+1, gate))
			ch, err := startInformerChild(ctx, self, cc, log, cfg.ReadyTimeout)
			if err != nil {
				return err
			}
			out = append(out, ch)
		}
		return nil
	}
	err := startSplit(cfg.Informers, func(kc string, gate bool, _, n int) InformerChildConfig {
		return InformerChildConfig{Kubeconfig: kc, WatchListClient: gate, Informers: n, RestartEvery: cfg.InformerRestart, RestartFor: cfg.Warmup + cfg.Window}
	}, "informers")
	if err != nil || !cfg.NodeWatches {
		return out, err
	}
	prefix, ok := nodeNamePrefix(nodes)
	if !ok {
		return out, fmt.Errorf("cluster: node watches need nodes named <prefix>0 to <prefix>%d, have %v", len(nodes)-1, nodes)
	}
	err = startSplit(len(nodes), func(kc string, gate bool, first, n int) InformerChildConfig {
		return InformerChildConfig{Kubeconfig: kc, WatchListClient: gate, NodePrefix: prefix, NodeFirst: first, NodeCount: n}
	}, "node-watches")
	return out, err
}

// nodeNamePrefix is p when nodes are exactly p+"0" to p+"<len-1>", in
// order.
func nodeNamePrefix(nodes []string) (string, bool) {
	if len(nodes) == 0 {
		return "", false
	}
	p, ok := strings.CutSuffix(nodes[0], "0")
	if !ok {
		return "", false
	}
	for i, n := range nodes {
		if n != p+strconv.Itoa(i) {
			return "", false
		}
	}
	return p, true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stopInformers stops every child and merges their stats per kind
// (pod informers, then node watches) and gate value (on first, then off).
func stopInformers(children []*informerChild) ([]InformerStats, error) {
	type key struct{ perNode, gate bool }
	merged := map[key]*InformerStats{}
	var errs error
	for _, ch := range children {
		st, err := ch.stop()
		if err != nil {
			errs = err
			continue
		}
		k := key{ch.perNode, ch.gate}
		if merged[k] == nil {
			merged[k] = &InformerStats{}
		}
		merged[k].add(st)
	}
	var out []InformerStats
	for _, perNode := range []bool{false, true} {
		for _, g := range []bool{true, false} {
			if s := merged[key{perNode, g}]; s != nil {
				out = append(out, *s)
			}
		}
	}
	return out, errs
}
