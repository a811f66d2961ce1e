package demo59848

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/internal/testenv"
	"github.com/freshcache/freshcache/lab/pkg/localup"
)

const (
	node      = "hollow-0"
	namespace = "default"
	podName   = "x"
)

// observe is how long the restarted kubelet talks to B:
// DEMO_59848_OBSERVE, 60 s by default.
var observe = 60 * time.Second

// variant is one configuration of both apiservers.
type variant struct {
	name string
	args []string
}

var variants = []variant{
	{"upstream", []string{"--watch-cache-implementation=upstream"}},
	{"freshcache", []string{"--watch-cache-implementation=freshcache"}},
	{"freshcache-rv0-off", []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=false"}},
}

// kubeletMode is how the hollow kubelet's client-go reads its pods: with
// WatchListClient on (1.35+ kubelets) its first request is a watch-list;
// off (1.34 and older, or a 1.35+ kubelet whose watch-list failed) it is a
// LIST at resourceVersion=0, then a WATCH.
type kubeletMode struct {
	watchList string // "on" or "off", as the closing lines print it
	kubemark  string // the binary in FRESHCACHE_BIN_DIR
}

var kubeletModes = []kubeletMode{
	{"on", "kubemark"},
	{"off", "kubemark-watchlist-off"},
}

// outcome is what one run saw.
type outcome struct {
	started    bool   // the restarted kubelet's runtime ran the deleted pod
	evidence   string // why started is what it is
	path       string // the restarted kubelet's pods requests to B
	staleAtRV0 string // what B answered an admin's rv=0 LIST just after the delete
}

func TestDemo59848(t *testing.T) {
	if os.Getenv("FRESHCACHE_DEMO_59848") == "" {
		t.Skip("set FRESHCACHE_DEMO_59848=1 and FRESHCACHE_BIN_DIR (make demo-59848)")
	}
	binDir := testenv.Require(t, "FRESHCACHE_BIN_DIR", "FRESHCACHE_BIN_DIR is not set (make demo-59848 sets it)")
	out := testenv.DirOr(t, "DEMO_59848_OUT")
	impls := selected(os.Getenv("DEMO_59848_RUN"))            // implementations, comma-separated; empty: all
	modes := selected(os.Getenv("DEMO_59848_WATCHLIST"))      // on, off or both (empty)
	trials, err := trialCount(os.Getenv("DEMO_59848_TRIALS")) // per configuration; default 1
	if err != nil {
		t.Fatal(err)
	}
	real, err := realMode() // DEMO_59848_NODE: hollow (default) or real
	if err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv("DEMO_59848_OBSERVE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second || d > 30*time.Minute {
			t.Fatalf("DEMO_59848_OBSERVE=%q: want a duration from 10s to 30m", v)
		}
		observe = d
	}
	replay, replayed := run, node
	if real {
		replay, replayed = runReal, realNodeName
	}
	var (
		closing []string
		rows    []trialRow
	)
	runStarted := time.Now()
	for _, v := range variants {
		if !impls(v.name) {
			continue
		}
		for _, m := range kubeletModes {
			if !modes(m.watchList) {
				continue
			}
			name := v.name + "-watchlist-" + m.watchList
			started := 0
			var route string
			for trial := 1; trial <= trials; trial++ {
				t.Run(fmt.Sprintf("%s/%d", name, trial), func(t *testing.T) {
					dir, err := filepath.Abs(filepath.Join(out, name, fmt.Sprint(trial)))
					if err != nil {
						t.Fatal(err)
					}
					_ = os.RemoveAll(dir)
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					began := time.Now()
					o := replay(t, binDir, dir, v, m)
					t.Logf("%s #%d: started %s: %s (run took %s, logs in %s)", name, trial, yesNo(o.started), o.evidence, time.Since(began).Round(time.Second), dir)
					t.Logf("%s #%d: B's answer to an admin rv=0 LIST of pods on %s after the delete: %s", name, trial, replayed, o.staleAtRV0)
					if o.started {
						started++
					}
					route = o.path
					rows = append(rows, trialRow{config: name, trial: trial, took: time.Since(began), o: o})
					if mustNotStart(v.name, m.watchList) && o.started {
						t.Errorf("%s: the restarted kubelet started the deleted pod: %s", name, o.evidence)
					}
				})
			}
			closing = append(closing, fmt.Sprintf("demo-59848 %s watchlist=%s: deleted pod started again: %s (%d of %d trials) — %s; %s",
				v.name, m.watchList, yesNo(started > 0), started, trials, describeNode(real), route))
			// A demo that cannot fail on upstream shows nothing: with the
			// kubelet listing first, upstream's lagging cache must hand it
			// the deleted pod.
			if v.name == "upstream" && m.watchList == "off" && started == 0 {
				t.Errorf("upstream watchlist=off: the deleted pod never started in %d trials; the demo did not reproduce kubernetes#59848", trials)
			}
		}
	}
	if report := os.Getenv("DEMO_59848_REPORT"); report != "" {
		if err := writeReport(report, reportInfo{began: runStarted, real: real, trials: trials, out: out}, rows, closing); err != nil {
			t.Errorf("writing %s: %v", report, err)
		}
	}
	// The closing lines, one per run, last so they are easy to find.
	for _, l := range closing {
		fmt.Println(l)
	}
}

// mustNotStart says which runs must never start the deleted pod. With the
// default gates freshcache's rv=0 reads are fresh (FreshResourceVersionZero
// is on): whatever the kubelet asks, its answer is never older than the
// delete. With the gate turned off, freshcache must still be no less safe
// than upstream's cacher: with a watch-list kubelet its watch-list waits
// for etcd's revision under the watch's context as upstream's does, so the
// kubelet never reaches the stale rv=0 fallback; a listing kubelet gets
// rv=0's upstream meaning (any state the cache holds) and may start it, as
// on upstream.
func mustNotStart(impl, watchList string) bool {
	return impl == "freshcache" || impl == "freshcache-rv0-off" && watchList == "on"
}

// selected turns a comma-separated list into a filter; empty selects all.
func selected(list string) func(string) bool {
	if list == "" || list == "both" {
		return func(string) bool { return true }
	}
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		want[strings.TrimSpace(s)] = true
	}
	return func(s string) bool { return want[s] }
}

// trialCount parses DEMO_59848_TRIALS.
func trialCount(s string) (int, error) {
	if s == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 20 {
		return 0, fmt.Errorf("DEMO_59848_TRIALS=%q: want a number of trials from 1 to 20", s)
	}
	return n, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func run(t *testing.T, binDir, dir string, v variant, m kubeletMode) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute+observe)
	defer cancel()

	rc := startReplay(ctx, t, dir, binDir, v, node, func(o *localup.Options) {
		o.Nodes = 1
		o.NodeAPIServer = 2
		o.KubemarkBinary = filepath.Join(binDir, m.kubemark)
	})
	lc, a, b := rc.lc, rc.a, rc.b
	kl := newKubelet(lc.Nodes[0].KubeletPort)
	key := namespace + "/" + podName

	// 1-2. A pod the scheduler (on A) binds to N, Running as N's kubelet
	// reports it through B, and in N's fake runtime.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: namespace},
		Spec: corev1.PodSpec{
			// No token volume: with B cut off a TokenRequest would fail
			// and hide what the kubelet's pod list did.
			AutomountServiceAccountToken: new(bool),
			Containers:                   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := a.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod through A: %v", err)
	}
	waitFor(ctx, t, "the pod Running on "+node+", seen through A and in the kubelet's runtime", func() (bool, string) {
		p, err := a.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != node || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("node %q phase %q", p.Spec.NodeName, p.Status.Phase)
		}
		pods, err := kl.runtimePods(ctx)
		if err != nil {
			return false, err.Error()
		}
		return contains(pods, key), fmt.Sprintf("runtime pods %v", pods)
	})
	// B's cache holds it too, Running (rv=0 is what the kubelet falls back
	// to).
	rc.waitBHolds(ctx, t, "the Running pod", func(p *corev1.Pod) bool { return p.Name == podName })

	// 3. Cut B's member off.
	rc.cutB(ctx, t)

	// 4. Delete through A, grace period 0, and confirm through A with a
	// consistent read.
	zero := int64(0)
	if err := a.CoreV1().Pods(namespace).Delete(ctx, podName, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete through A: %v", err)
	}
	waitFor(ctx, t, "A to confirm the delete", func() (bool, string) {
		_, err := a.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprint(err)
	})
	stale := staleCheck(ctx, b, node)

	// 5. Restart N's kubelet, still on B, and watch it for a minute.
	restarted := time.Now()
	n, err := lc.RestartNode(0)
	if err != nil {
		t.Fatalf("restarting %s: %v", node, err)
	}
	names := map[string]string{
		"kubelet_started_pods_total":       "",
		"kubelet_started_containers_total": `container_type="container"`,
		"kubelet_running_pods":             "",
		"kubelet_running_containers":       `container_state="running"`,
	}
	var (
		inRuntime, admitted bool
		maxStarted          float64
		probeErr            string
		lastMetrics         map[string]float64
	)
	observeKubelet(ctx, t, n, func() {
		if pods, err := kl.runtimePods(ctx); err == nil {
			inRuntime = inRuntime || contains(pods, key)
		} else {
			probeErr = err.Error()
		}
		if pods, err := kl.managedPods(ctx); err == nil {
			admitted = admitted || contains(pods, key)
		}
		if m, err := kl.metrics(ctx, names); err == nil {
			lastMetrics = m
			maxStarted = max(maxStarted, m["kubelet_started_containers_total"])
		}
	})
	if lastMetrics == nil {
		t.Fatalf("the restarted kubelet's /metrics never answered (last probe error: %s)", probeErr)
	}

	// 6. What it asked B.
	route := rc.kubeletRoute(t, node, restarted)
	started := inRuntime || maxStarted > 0
	return outcome{
		started: started,
		evidence: fmt.Sprintf("in the new kubelet's runtime (/runningpods/): %v; admitted (/pods): %v; kubelet_started_containers_total{container}: %g; at the end kubelet_running_pods %g, kubelet_started_pods_total %g, kubelet_running_containers{running} %g",
			inRuntime, admitted, maxStarted, lastMetrics["kubelet_running_pods"], lastMetrics["kubelet_started_pods_total"], lastMetrics["kubelet_running_containers"]),
		path:       route,
		staleAtRV0: stale,
	}
}

// staleCheck asks B, as an admin, the LIST the kubelet falls back to.
func staleCheck(ctx context.Context, b kubernetes.Interface, node string) string {
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	l, err := b.CoreV1().Pods(namespace).List(rctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return "error: " + err.Error()
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return fmt.Sprintf("no pods, rv %s (fresh)", l.ResourceVersion)
	}
	return fmt.Sprintf("%s at rv %s (stale: the deleted pod)", strings.Join(names, ","), l.ResourceVersion)
}

func clientset(t *testing.T, lc *localup.Cluster, i int) kubernetes.Interface {
	cfg := localup.RESTConfig(lc.APIServers[i].URL, lc.PKI)
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitFor polls cond every 250 ms until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last string
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		select {
		case <-deadline.Done():
			t.Fatalf("waiting for %s: %v (last: %s)", what, deadline.Err(), last)
		case <-tick.C:
		}
	}
}

// testWriter sends local-up's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
