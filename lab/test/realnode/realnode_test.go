package realnode

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/internal/testenv"
	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

const podCommand = "echo hi; sleep 3600"

// TestRealNodeRunsPods starts local-up with one real node (and two hollow
// ones) and a busybox pod, checks that the pod is a real process with logs and exec, kills
// local-up (SIGKILL, so nothing is undone), starts it again (which undoes
// the leftovers and runs the pod again), stops it with SIGINT and checks
// the host is as before.
func TestRealNodeRunsPods(t *testing.T) {
	if os.Getenv("FRESHCACHE_REAL_NODES") != "1" {
		t.Skip("changes the host (containerd, a kubelet, an address on lo, iptables): set FRESHCACHE_REAL_NODES=1 and run as root (make test-real-nodes)")
	}
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root: sudo make test-real-nodes")
	}
	binDir, dataDir := dirs(t, "test-real-nodes")
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()

	before, err := realnode.TakeSnapshot(ctx, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := launch.Options{
		BinDir:  binDir,
		DataDir: dataDir,
		// make run's two hollow nodes too: the pod must still land on
		// the real node, and the host must be as before with them.
		Args:         []string{"--controllers=true", "--nodes=2", "--real-nodes=1"},
		ReadyTimeout: 6 * time.Minute,
	}
	helperDir := filepath.Join(dataDir, "incluster")
	buildInCluster(ctx, t, helperDir)
	lu := start(ctx, t, opts)
	k := kubectl{bin: filepath.Join(binDir, "kubectl"), kubeconfig: lu.Ready.Kubeconfig}
	if len(lu.Ready.RealNodes) != 1 {
		t.Fatalf("ready file lists real nodes %+v, want one", lu.Ready.RealNodes)
	}
	node := lu.Ready.RealNodes[0]
	t.Logf("real node %s: kubelet pid %d, containerd pid %d, node IP %s", node.Name, node.KubeletPID, node.ContainerdPID, node.NodeIP)

	k.run(ctx, t, "delete", "pod", "x", "web", "--ignore-not-found", "--wait=true")
	k.run(ctx, t, "delete", "service", "web", "--ignore-not-found")
	k.run(ctx, t, "run", "x", "--image=registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "--restart=Always", "--", "sh", "-c", podCommand)
	first := podRunsForReal(ctx, t, k, node.Name, "")
	if node.KubeProxyPID == 0 {
		t.Fatalf("ready file lists no kube-proxy for %s", node.Name)
	}
	svcIP := serviceWorks(ctx, t, k)
	dnsWorks(ctx, t, k, svcIP)
	apiserverFromPod(ctx, t, k, lu.Ready, node.NodeIP, helperDir)

	// A crash: SIGKILL leaves the containers, their shims, the node IP,
	// the bridge, iptables and sysctls behind; the next start undoes them
	// and the kubelet starts the pod again.
	if err := syscall.Kill(lu.Ready.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-lu.Exited()
	if _, err := os.Stat(filepath.Join(dataDir, "real-nodes", node.Name, "state.json")); err != nil {
		t.Fatalf("after SIGKILL the undo journal should be left for the next start: %v", err)
	}
	lu = start(ctx, t, opts)
	if !strings.Contains(lu.Output(), "undoing what an earlier run left behind") {
		t.Errorf("the start after a crash did not undo its leftovers:\n%s", lu.Output())
	}
	podRunsForReal(ctx, t, k, node.Name, first)
	// The new apiserver took the kubernetes Service's endpoint back.
	apiserverFromPod(ctx, t, k, lu.Ready, node.NodeIP, helperDir)
	k.run(ctx, t, "delete", "pod", "x", "web", "incluster", "--ignore-not-found", "--wait=false")
	k.run(ctx, t, "delete", "service", "web")

	if err := lu.Stop(2 * time.Minute); err != nil {
		t.Fatalf("local-up exited with %v after SIGINT:\n%s", err, lu.Output())
	}
	if strings.Contains(lu.Output(), "real node "+node.Name+": realnode:") {
		t.Errorf("the stop reported what it could not undo:\n%s", lu.Output())
	}
	after, err := realnode.TakeSnapshot(ctx, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := before.Diff(after); len(diff) > 0 {
		t.Errorf("the host is not as before the run:\n%s", strings.Join(diff, "\n"))
	}
}

// TestHollowNodesLeaveIPTablesAlone starts local-up without a real node
// (make run's two hollow nodes) as root, where kubemark's kubelet would add
// its KUBE-* chains to the host's iptables, and checks that the hollow
// kubelets found no iptables and that iptables is as before while they run
// and after the stop.
func TestHollowNodesLeaveIPTablesAlone(t *testing.T) {
	if os.Getenv("FRESHCACHE_REAL_NODES") != "1" || os.Geteuid() != 0 {
		t.Skip("only as root, where a hollow kubelet can change iptables: make test-real-nodes")
	}
	binDir, dataDir := dirs(t, "test-hollow-nodes")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	iptables := func() [2]string {
		t.Helper()
		s, err := realnode.TakeSnapshot(ctx, dataDir)
		if err != nil {
			t.Fatal(err)
		}
		return [2]string{s.IPTables, s.IP6Tables}
	}
	before := iptables()
	lu := start(ctx, t, launch.Options{BinDir: binDir, DataDir: dataDir, Args: []string{"--controllers=true", "--nodes=2", "--real-nodes=0"}, ReadyTimeout: 3 * time.Minute})
	// A kubelet sets its chains up before it registers its node, so by
	// now they would be there.
	during := iptables()
	for _, n := range lu.Ready.Nodes {
		data, err := os.ReadFile(n.Log)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "No iptables support on this system") || strings.Contains(string(data), "Initialized iptables rules") {
			t.Errorf("hollow node %s's kubelet found iptables (log %s)", n.Name, n.Log)
		}
	}
	if err := lu.Stop(2 * time.Minute); err != nil {
		t.Fatalf("local-up exited with %v after SIGINT:\n%s", err, lu.Output())
	}
	after := iptables()
	for i, cmd := range []string{"iptables", "ip6tables"} {
		if during[i] != before[i] {
			t.Errorf("%s changed while the hollow nodes ran:\nbefore:\n%s\nduring:\n%s", cmd, before[i], during[i])
		}
		if after[i] != before[i] {
			t.Errorf("%s is not as before the run:\nbefore:\n%s\nafter:\n%s", cmd, before[i], after[i])
		}
	}
}

func start(ctx context.Context, t *testing.T, opts launch.Options) *launch.Process {
	t.Helper()
	lu, err := launch.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lu.Stop(2 * time.Minute) })
	return lu
}

// podRunsForReal waits for pod x's container to be ready in a container
// other than oldContainer (the one of an earlier local-up: the status it
// left in etcd says Ready until the new kubelet reports), then checks its
// log, an exec in it, and that its sleep is a process on this host. It
// returns the container's ID.
func podRunsForReal(ctx context.Context, t *testing.T, k kubectl, node, oldContainer string) string {
	t.Helper()
	var container string
	deadline := time.NewTimer(3 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		out := k.run(ctx, t, "get", "pod", "x", "-o", "jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].ready}")
		if f := strings.Fields(out); len(f) == 2 && f[0] != oldContainer && f[1] == "true" {
			container = f[0]
			break
		}
		select {
		case <-deadline.C:
			t.Fatalf("pod x's container is not ready in a new container after 3m: %q (old %q)", out, oldContainer)
		case <-tick.C:
		}
	}
	status := k.run(ctx, t, "get", "pod", "x", "-o", "jsonpath={.status.phase} {.spec.nodeName} {.status.podIP}")
	t.Logf("pod x: %s", status)
	if f := strings.Fields(status); len(f) != 3 || f[0] != "Running" || f[1] != node {
		t.Fatalf("pod x is %q, want Running on %s with an IP", status, node)
	}
	logs := k.run(ctx, t, "logs", "x")
	t.Logf("kubectl logs x: %q", logs)
	if !strings.Contains(logs, "hi") {
		t.Errorf("kubectl logs x = %q, want hi", logs)
	}
	out := k.run(ctx, t, "exec", "x", "--", "sh", "-c", "echo exec-ok; cat /proc/1/cmdline | tr '\\0' ' '")
	t.Logf("kubectl exec x: %q", out)
	if !strings.Contains(out, "exec-ok") || !strings.Contains(out, "sleep 3600") {
		t.Errorf("kubectl exec x = %q, want exec-ok and PID 1 sleeping", out)
	}
	if !hostRuns("sleep\x003600\x00") {
		t.Errorf("no process on this host runs the pod's sleep 3600")
	}
	return container
}

// serviceWorks serves a page from a busybox httpd pod behind Service web
// and fetches it through the Service's ClusterIP, which only kube-proxy's
// rules make reachable, from pod x and from the host.
func serviceWorks(ctx context.Context, t *testing.T, k kubectl) string {
	t.Helper()
	k.run(ctx, t, "run", "web", "--image=registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "--labels=app=web", "--",
		"sh", "-c", "mkdir -p /www && echo hello-svc > /www/index.html && exec httpd -f -p 8080 -h /www")
	k.run(ctx, t, "expose", "pod", "web", "--port=80", "--target-port=8080", "--name=web")
	k.run(ctx, t, "wait", "--for=condition=Ready", "pod/web", "--timeout=3m")
	ip := strings.TrimSpace(k.run(ctx, t, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
	// kube-proxy writes the Service's rules shortly after it appears.
	var got string
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := exec.CommandContext(ctx, k.bin, "--kubeconfig="+k.kubeconfig, "exec", "x", "--", "wget", "-qO-", "http://"+ip+"/").Output()
		got = string(out)
		if err == nil && strings.Contains(got, "hello-svc") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod x could not fetch http://%s/ (Service web) within 1m: %q, %v", ip, got, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	t.Logf("pod x -> Service web %s: %q", ip, got)
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "80"), 5*time.Second)
	if err != nil {
		t.Fatalf("the host cannot reach Service web at %s:80: %v", ip, err)
	}
	_ = conn.Close()
	return ip
}

// dnsWorks resolves Service web's name from pod x through CoreDNS (the
// kube-dns Service, the pod's nameserver).
func dnsWorks(ctx context.Context, t *testing.T, k kubectl, svcIP string) {
	t.Helper()
	conf := k.run(ctx, t, "exec", "x", "--", "cat", "/etc/resolv.conf")
	if !strings.Contains(conf, "nameserver 10.0.0.10") {
		t.Errorf("pod x's resolv.conf does not name kube-dns (10.0.0.10):\n%s", conf)
	}
	out := k.run(ctx, t, "exec", "x", "--", "nslookup", "web.default.svc.cluster.local")
	t.Logf("nslookup web.default.svc.cluster.local in pod x:\n%s", out)
	if !strings.Contains(out, svcIP) {
		t.Errorf("nslookup web.default.svc.cluster.local = %q, want %s", out, svcIP)
	}
}

// apiserverFromPod checks that pods reach the first apiserver as
// in-cluster clients do. The kubernetes Service's endpoint is the first
// apiserver on the node IP; pod x has the Service in its environment;
// and a pod running the incluster helper (client-go's in-cluster
// configuration: the Service's IP from the environment, the pod's service
// account token, the certificate checked against the pod's CA bundle) is
// answered, at the Service's IP and at its DNS name, as the pod's service
// account. busybox's wget cannot be used: its TLS sends no
// signature_algorithms, which Go 1.25 and later refuse. The host checks
// the certificate served at the Service's IP for the names in-cluster
// clients dial, and the one at the node IP, against local-up's CA.
func apiserverFromPod(ctx context.Context, t *testing.T, k kubectl, ready *localup.ReadyFile, nodeIP, helperDir string) {
	t.Helper()
	apiserver, err := url.Parse(ready.APIServers[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	port := apiserver.Port()
	eps := k.run(ctx, t, "get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes",
		"-o", "jsonpath={.items[*].endpoints[*].addresses[*]}:{.items[*].ports[*].port}")
	if want := nodeIP + ":" + port; strings.TrimSpace(eps) != want {
		t.Errorf("the kubernetes Service's endpoints are %q, want %s (the first apiserver on the node IP)", eps, want)
	}
	env := k.run(ctx, t, "exec", "x", "--", "sh", "-c", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT")
	if strings.TrimSpace(env) != kubernetesServiceIP+":443" {
		t.Errorf("pod x's KUBERNETES_SERVICE_HOST:PORT = %q, want %s:443", env, kubernetesServiceIP)
	}

	k.run(ctx, t, "delete", "pod", "incluster", "--ignore-not-found", "--wait=true")
	manifest := filepath.Join(helperDir, "pod.json")
	if err := os.WriteFile(manifest, []byte(inclusterPod(helperDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	k.run(ctx, t, "create", "-f", manifest)
	var phase string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		phase = k.run(ctx, t, "get", "pod", "incluster", "-o", "jsonpath={.status.phase} {.spec.nodeName}")
		if f := strings.Fields(phase); len(f) > 0 && (f[0] == "Succeeded" || f[0] == "Failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod incluster has not finished after 2m: %q", phase)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	logs := k.run(ctx, t, "logs", "incluster")
	t.Logf("pod incluster (%s):\n%s", phase, logs)
	for _, host := range []string{"https://" + kubernetesServiceIP + ":443", "https://kubernetes.default.svc"} {
		if want := host + " user=system:serviceaccount:default:default"; !strings.Contains(logs, want) {
			t.Errorf("pod incluster was not answered at %s as its service account: want %q in its log", host, want)
		}
	}
	if f := strings.Fields(phase); len(f) != 2 || f[0] != "Succeeded" || f[1] != ready.RealNodes[0].Name {
		t.Errorf("pod incluster is %q, want Succeeded on %s", phase, ready.RealNodes[0].Name)
	}
	k.run(ctx, t, "delete", "pod", "incluster", "--wait=false")

	caPEM, err := os.ReadFile(filepath.Join(ready.DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no certificate in local-up's ca.crt")
	}
	for _, c := range []struct{ addr, name string }{
		{kubernetesServiceIP + ":443", kubernetesServiceIP},
		{kubernetesServiceIP + ":443", "kubernetes.default.svc"},
		{kubernetesServiceIP + ":443", "kubernetes.default.svc.cluster.local"},
		{net.JoinHostPort(nodeIP, port), nodeIP},
	} {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: roots, ServerName: c.name, MinVersion: tls.VersionTLS12}}
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			t.Errorf("TLS to the apiserver at %s as %s, checked against local-up's CA: %v", c.addr, c.name, err)
			continue
		}
		_ = conn.Close()
	}
}

// buildInCluster builds the incluster helper (a static binary, so any
// image runs it) into dir, which the helper pod mounts.
func buildInCluster(ctx context.Context, t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "incluster"), "./incluster")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the incluster helper: %v\n%s", err, out)
	}
}

// inclusterPod runs the helper in helperDir, mounted from the host, with
// the default service account's token (the default automount).
func inclusterPod(helperDir string) string {
	return `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "incluster"},
 "spec": {"restartPolicy": "Never",
  "containers": [{"name": "incluster", "image": "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "command": ["/helper/incluster"],
   "volumeMounts": [{"name": "helper", "mountPath": "/helper", "readOnly": true}]}],
  "volumes": [{"name": "helper", "hostPath": {"path": "` + helperDir + `", "type": "Directory"}}]}}`
}

// kubernetesServiceIP is the kubernetes Service's ClusterIP in local-up's
// service range (10.0.0.0/24).
const kubernetesServiceIP = "10.0.0.1"

// hostRuns reports whether a process on the host has this command line.
func hostRuns(cmdline string) bool {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil && string(data) == cmdline {
			return true
		}
	}
	return false
}

type kubectl struct {
	bin, kubeconfig string
}

// run runs kubectl and returns its stdout; a failure fails the test.
func (k kubectl) run(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig=" + k.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || ctx.Err() != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		t.Fatal(err)
	}
	return stdout.String()
}

// dirs returns make build's bin directory, which make test-real-nodes
// names in FRESHCACHE_BIN_DIR, and the data directory name beside it.
func dirs(t *testing.T, name string) (binDir, dataDir string) {
	t.Helper()
	binDir = testenv.Require(t, "FRESHCACHE_BIN_DIR", "FRESHCACHE_BIN_DIR is not set: run make test-real-nodes")
	return binDir, filepath.Join(binDir, "..", name)
}
