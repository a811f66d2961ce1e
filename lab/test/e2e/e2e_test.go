package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/internal/freeport"
	"github.com/freshcache/freshcache/lab/internal/tcptest"
)

// implementations are the watch caches the e2e suite runs against; the
// default comes first.
var implementations = []string{"freshcache", "upstream"}

func TestLocalUpServesKubernetesAPI(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl, func(t *testing.T) {
			l := startLocalUp(t, "--watch-cache-implementation="+impl)
			cs := l.client(t, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()

			ns := createNamespace(ctx, t, cs, "e2e-"+impl)
			t.Run("create", func(t *testing.T) { createObjects(ctx, t, cs, ns) })
			t.Run("list", func(t *testing.T) { listAtEveryResourceVersion(ctx, t, cs, ns) })
			t.Run("get", func(t *testing.T) { getObjects(ctx, t, cs, ns) })
			t.Run("watch", func(t *testing.T) { watchDeliversEvents(ctx, t, cs, ns) })
			t.Run("metrics", func(t *testing.T) { metricsAreServed(ctx, t, cs, impl) })
			t.Run("kubectl", func(t *testing.T) { kubectlWorks(t, l, ns) })

			if err := l.stop(t); err != nil {
				t.Fatalf("local-up exited with %v after SIGINT, want a clean exit\n%s", err, l.out())
			}
			if !strings.Contains(l.out(), "Stopped.") {
				t.Fatalf("local-up did not report a clean stop:\n%s", l.out())
			}
		})
	}
}

func createNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	// local-up runs no controller-manager, so create the default service
	// account that ServiceAccount admission requires of pods.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	return name
}

const objectsPerKind = 5

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "e2e"}},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

func createObjects(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	for i := 0; i < objectsPerKind; i++ {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("pod-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %d: %v", i, err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap %d: %v", i, err)
		}
	}
}

func listAtEveryResourceVersion(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	consistent, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list rv=\"\": %v", err)
	}
	if len(consistent.Items) != objectsPerKind {
		t.Fatalf("list rv=\"\" returned %d pods, want %d (every pod created before the read)", len(consistent.Items), objectsPerKind)
	}
	rv := consistent.ResourceVersion
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
		t.Fatalf("list rv=\"\" returned resourceVersion %q, want a number", rv)
	}

	// rv=0 may be served from a cache that has not caught up; it must still
	// be a valid list of this namespace, and eventually hold every pod.
	waitFor(ctx, t, "rv=0 list to contain every pod", func() (bool, string) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range l.Items {
			if p.Namespace != ns {
				return false, "pod from namespace " + p.Namespace
			}
		}
		return len(l.Items) == objectsPerKind, fmt.Sprintf("%d pods", len(l.Items))
	})

	exact, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatalf("list rv=%s Exact: %v", rv, err)
	}
	if exact.ResourceVersion != rv {
		t.Fatalf("list Exact at %s answered at %s", rv, exact.ResourceVersion)
	}
	if len(exact.Items) != objectsPerKind {
		t.Fatalf("list Exact at %s returned %d pods, want %d", rv, len(exact.Items), objectsPerKind)
	}

	limited, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatalf("list limit=2: %v", err)
	}
	if len(limited.Items) != 2 || limited.Continue == "" {
		t.Fatalf("list limit=2 returned %d items, continue %q; want 2 and a token", len(limited.Items), limited.Continue)
	}
	rest, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 10, Continue: limited.Continue})
	if err != nil {
		t.Fatalf("list with continue: %v", err)
	}
	// The namespace also holds kube-root-ca.crt, published by a controller
	// that local-up does not run, so count only ours.
	if got := countPrefixed(limited.Items, "cm-") + countPrefixed(rest.Items, "cm-"); got != objectsPerKind {
		t.Fatalf("paginated list returned %d configmaps, want %d", got, objectsPerKind)
	}

	_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "not-a-number"})
	if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("list with a malformed resourceVersion returned %v, want 400 BadRequest", err)
	}
}

func countPrefixed(items []corev1.ConfigMap, prefix string) int {
	n := 0
	for _, cm := range items {
		if strings.HasPrefix(cm.Name, prefix) {
			n++
		}
	}
	return n
}

func getObjects(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "pod-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	if p.Spec.NodeName != "node-a" {
		t.Fatalf("get pod returned nodeName %q, want node-a", p.Spec.NodeName)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-3", metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("get configmap rv=0: %v", err)
	}
	if cm.Data["i"] != "3" {
		t.Fatalf("get configmap returned data %v", cm.Data)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "no-such-configmap", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing object returned %v, want 404", err)
	}
}

func watchDeliversEvents(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from %s: %v", list.ResourceVersion, err)
	}
	defer w.Stop()

	created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Data = map[string]string{"k": "v"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	want := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
	var got []watch.EventType
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for len(got) < len(want) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", got)
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				t.Fatalf("unexpected watch event %v %T", ev.Type, ev.Object)
			}
			if cm.Name != "watched" {
				continue
			}
			got = append(got, ev.Type)
		case <-timeout.C:
			t.Fatalf("watch delivered %v within 1m, want %v", got, want)
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("watch delivered %v, want %v", got, want)
		}
	}
}

func metricsAreServed(ctx context.Context, t *testing.T, cs kubernetes.Interface, impl string) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	text := string(body)
	// apiserver_resource_objects, not apiserver_storage_objects: that one is
	// deprecated since 1.34 and hidden in a binary that knows it is v1.37.2
	// (make build's version ldflags), as in any real 1.37 cluster.
	for _, name := range []string{"apiserver_request_total", "apiserver_resource_objects"} {
		if !strings.Contains(text, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// Each cache exposes its own metrics, and only the one in use has samples.
	freshcacheSample := `apiserver_freshcache_resource_version{group="",resource="pods"}`
	switch impl {
	case "freshcache":
		if !strings.Contains(text, freshcacheSample) {
			t.Errorf("/metrics lacks %s: the pods cache is not freshcache", freshcacheSample)
		}
	case "upstream":
		if strings.Contains(text, freshcacheSample) {
			t.Errorf("/metrics has %s with the upstream cache", freshcacheSample)
		}
		if !strings.Contains(text, `apiserver_watch_cache_resource_version{group="",resource="pods"}`) {
			t.Errorf("/metrics lacks upstream's watch cache resource version for pods")
		}
	}
}

func kubectlWorks(t *testing.T, l *localUp, ns string) {
	out := l.kubectl(t, 0, "", "get", "ns")
	if !strings.Contains(out, ns) || !strings.Contains(out, "kube-system") {
		t.Fatalf("kubectl get ns does not list %s and kube-system:\n%s", ns, out)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
  namespace: %s
data:
  source: kubectl-apply
`, ns)
	out = l.kubectl(t, 0, manifest, "apply", "-f", "-")
	if !strings.Contains(out, "configmap/applied") {
		t.Fatalf("kubectl apply output: %s", out)
	}
	out = l.kubectl(t, 0, "", "get", "configmap", "applied", "-n", ns, "-o", "jsonpath={.data.source}")
	if out != "kubectl-apply" {
		t.Fatalf("kubectl get of the applied configmap returned %q", out)
	}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s (last: %s)", what, last)
		case <-tick.C:
		}
	}
}

func TestKubeAPIServerHelpShowsWatchCacheFlag(t *testing.T) {
	out, err := exec.Command(bin("kube-apiserver"), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-apiserver --help: %v\n%s", err, out)
	}
	for _, want := range []string{"--watch-cache-implementation", "freshcache|upstream", "--etcd-servers", "--watch-cache-sizes"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kube-apiserver --help does not mention %s", want)
		}
	}
}

func TestKubeAPIServerRefusesUnknownImplementation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin("kube-apiserver"), "--watch-cache-implementation=bogus", "--etcd-servers=http://127.0.0.1:1").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("kube-apiserver with a bogus cache: err=%v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(string(out), `"bogus"`) || !strings.Contains(string(out), "freshcache|upstream") {
		t.Fatalf("error does not name the bad value and the valid values:\n%s", out)
	}
}

func TestLocalUpReportsPortInUse(t *testing.T) {
	taken := tcptest.Listen(t)
	port := taken.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin("local-up"), "--data-dir="+t.TempDir(), "--secure-port="+strconv.Itoa(port),
		"--etcd-client-port=0", "--etcd-peer-port=0", "--kube-apiserver="+bin("kube-apiserver"))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("local-up on a taken port: err=%v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(string(out), "already in use") || !strings.Contains(string(out), strconv.Itoa(port)) {
		t.Fatalf("local-up does not say which port is in use:\n%s", out)
	}

	// A hollow node's kubelet port: refused before anything starts.
	free, err := freeport.Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	out, err = exec.CommandContext(ctx, bin("local-up"), "--data-dir="+t.TempDir(), "--secure-port="+strconv.Itoa(free),
		"--etcd-client-port=0", "--etcd-peer-port=0", "--kube-apiserver="+bin("kube-apiserver"),
		"--controllers=false", "--nodes=1", "--kubelet-port="+strconv.Itoa(port)).CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("local-up with a taken kubelet port: err=%v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(string(out), "--kubelet-port") || !strings.Contains(string(out), "already in use") || strings.Contains(string(out), "etcd:") {
		t.Fatalf("local-up does not name --kubelet-port, or started etcd first:\n%s", out)
	}
}

func TestLocalUpRefusesBadFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"two etcd members", []string{"--etcd-members=2"}, "--etcd-members=2"},
		{"non-loopback bind", []string{"--bind-address=0.0.0.0"}, "loopback"},
		{"positional argument", []string{"stray"}, "unexpected argument"},
		{"negative node count", []string{"--nodes=-3"}, "--nodes=-3: use 0 to"},
		{"absurd node count", []string{"--nodes=1000000"}, "--nodes=1000000: use 0 to"},
		{"missing kubemark", []string{"--kubemark=/nonexistent/kubemark"}, "--kubemark=/nonexistent/kubemark"},
		{"missing controller-manager", []string{"--kube-controller-manager=/nonexistent/kcm"}, "--kube-controller-manager=/nonexistent/kcm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append([]string{"--data-dir=" + t.TempDir(), "--kube-apiserver=" + bin("kube-apiserver")}, tc.args...)
			out, err := exec.CommandContext(ctx, bin("local-up"), args...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("err=%v, want a non-zero exit\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output does not mention %q:\n%s", tc.want, out)
			}
		})
	}
}

func TestLocalUpReportsUnreachableEtcd(t *testing.T) {
	addr := tcptest.DeadAddr(t)
	port, err := freeport.Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin("local-up"), "--data-dir="+t.TempDir(), "--etcd-servers=http://"+addr,
		"--etcd-ready-timeout=3s", "--secure-port="+strconv.Itoa(port), "--kube-apiserver="+bin("kube-apiserver")).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("local-up against an unreachable etcd: err=%v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(string(out), "etcd did not answer") || !strings.Contains(string(out), addr) {
		t.Fatalf("local-up does not say which etcd is unreachable:\n%s", out)
	}
}

// TestWatchCacheFalseMeansNoCache keeps upstream's meaning of
// --watch-cache=false: no cache at all, whatever the implementation flag says.
func TestWatchCacheFalseMeansNoCache(t *testing.T) {
	l := startLocalUp(t, "--watch-cache=false", "--watch-cache-implementation=freshcache")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := l.client(t, 0)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "uncached"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if countPrefixed(got.Items, "uncached") != 1 {
		t.Fatalf("rv=0 list without a cache misses a write: %d items", len(got.Items))
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, cacheMetric := range []string{"apiserver_freshcache_resource_version{", "apiserver_watch_cache_resource_version{"} {
		if strings.Contains(string(body), cacheMetric) {
			t.Errorf("--watch-cache=false, yet /metrics has samples of %s", cacheMetric)
		}
	}
}
