package localup

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/lab/internal/errtest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

func TestSplitArgs(t *testing.T) {
	cases := []struct {
		name         string
		args         []string
		ours, theirs []string
	}{
		{"empty", nil, nil, nil},
		{"ours with =", []string{"--apiservers=2"}, []string{"--apiservers=2"}, nil},
		{"ours with separate value", []string{"--apiservers", "2"}, []string{"--apiservers", "2"}, nil},
		{"theirs with =", []string{"--feature-gates=A=true"}, nil, []string{"--feature-gates=A=true"}},
		{"theirs with separate value", []string{"--v", "4", "--apiservers=2"}, []string{"--apiservers=2"}, []string{"--v", "4"}},
		{"theirs boolean before ours", []string{"--profiling", "--data-dir=/x"}, []string{"--data-dir=/x"}, []string{"--profiling"}},
		{"double dash", []string{"--data-dir=/x", "--", "--apiservers=3"}, []string{"--data-dir=/x"}, []string{"--apiservers=3"}},
		{"positional stays ours", []string{"stray"}, []string{"stray"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			NewOptions().AddFlags(fs)
			ours, theirs := SplitArgs(fs, tc.args)
			if !reflect.DeepEqual(ours, tc.ours) || !reflect.DeepEqual(theirs, tc.theirs) {
				t.Fatalf("SplitArgs(%q) = %q, %q; want %q, %q", tc.args, ours, theirs, tc.ours, tc.theirs)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"defaults", func(*Options) {}, ""},
		{"three members", func(o *Options) { o.EtcdMembers = 3 }, ""},
		{"two members", func(o *Options) { o.EtcdMembers = 2 }, "--etcd-members=2"},
		{"external etcd ignores members", func(o *Options) { o.EtcdMembers = 2; o.EtcdServers = []string{"http://127.0.0.1:2379"} }, ""},
		{"no apiservers", func(o *Options) { o.APIServers = 0 }, "--apiservers=0"},
		{"port out of range", func(o *Options) { o.SecurePort = 65535; o.APIServers = 2 }, "--secure-port"},
		{"negative port", func(o *Options) { o.SecurePort = -1 }, "--secure-port"},
		{"port 0 picks", func(o *Options) { o.SecurePort = 0; o.APIServers = 3 }, ""},
		{"public bind", func(o *Options) { o.BindAddress = "0.0.0.0" }, "loopback"},
		{"our flag passed through", func(o *Options) { o.PassThrough = []string{"--etcd-servers=http://x"} }, "local-up's own flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.mutate(o)
			errtest.WantFirst(t, "Validate()", o.Validate(), tc.want)
		})
	}
}

// TestSecurePortZeroPicksDistinctPorts: --secure-port=0 gives every
// apiserver its own port, none shared with the controllers or the nodes.
func TestSecurePortZeroPicksDistinctPorts(t *testing.T) {
	o := NewOptions()
	o.SecurePort, o.APIServers, o.Nodes = 0, 3, 2
	p, err := o.pickPorts()
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]int{p.controllerManager, p.scheduler}, p.apiservers...), p.kubelets...)
	if len(p.apiservers) != 3 || len(all) != 7 {
		t.Fatalf("ports %+v: want 3 apiservers, 2 controllers, 2 kubelets", p)
	}
	seen := map[int]bool{}
	for _, port := range all {
		if port <= 0 || seen[port] {
			t.Fatalf("ports %+v: %d is zero or picked twice", p, port)
		}
		seen[port] = true
	}
}

func TestPKIIsReusedAcrossRestarts(t *testing.T) {
	p := PKI{Dir: t.TempDir()}
	if err := p.Ensure(DefaultHosts()); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(p.AdminCert())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ensure(DefaultHosts()); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(p.AdminCert())
	if string(first) != string(second) {
		t.Fatal("a restart regenerated the admin certificate; earlier kubeconfigs would stop working")
	}

	ca := parseCert(t, p.CACert())
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	serving := parseCert(t, p.ServingCert())
	if _, err := serving.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("serving cert does not verify for 127.0.0.1: %v", err)
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: pool, DNSName: "kubernetes.default.svc"}); err != nil {
		t.Fatalf("serving cert does not verify for kubernetes.default.svc: %v", err)
	}
	admin := parseCert(t, p.AdminCert())
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("admin cert is not a client cert of the CA: %v", err)
	}
	if admin.Subject.CommonName != AdminUser || !reflect.DeepEqual(admin.Subject.Organization, []string{"system:masters"}) {
		t.Fatalf("admin subject %v, want CN=%s O=system:masters", admin.Subject, AdminUser)
	}
}

func TestKubeconfigLoads(t *testing.T) {
	p := PKI{Dir: t.TempDir()}
	if err := p.Ensure(DefaultHosts()); err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/kubeconfig"
	if err := WriteKubeconfig(path, "https://127.0.0.1:6443", p); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || len(cfg.CAData) == 0 || len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
		t.Fatalf("kubeconfig lacks server or embedded credentials: host=%q", cfg.Host)
	}
}

func TestLastLines(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
		{"only", 1, "only"},
	}
	for _, tc := range cases {
		if got := string(lastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s is not PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestComponentIdentities: every component's certificate carries the
// subject RBAC's bootstrap policy and the Node authorizer expect.
func TestComponentIdentities(t *testing.T) {
	p := PKI{Dir: t.TempDir()}
	if err := p.Ensure(DefaultHosts()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, cn string
		orgs     []string
	}{
		{"kube-controller-manager", "system:kube-controller-manager", nil},
		{"kube-scheduler", "system:kube-scheduler", nil},
		{"node-hollow-0", "system:node:hollow-0", []string{"system:nodes"}},
	}
	pool := x509.NewCertPool()
	pool.AddCert(parseCert(t, p.CACert()))
	for _, tc := range cases {
		if err := p.EnsureClient(tc.name, tc.cn, tc.orgs); err != nil {
			t.Fatal(err)
		}
		c := parseCert(t, p.ClientCert(tc.name))
		if c.Subject.CommonName != tc.cn || !reflect.DeepEqual(c.Subject.Organization, tc.orgs) {
			t.Errorf("%s: subject %v, want CN=%s O=%v", tc.name, c.Subject, tc.cn, tc.orgs)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: not a client certificate of the CA: %v", tc.name, err)
		}
	}
	if err := p.EnsureServing("kube-scheduler", []string{"127.0.0.1", "localhost"}); err != nil {
		t.Fatal(err)
	}
	if _, err := parseCert(t, p.ServingCertFor("kube-scheduler")).Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("scheduler serving cert does not verify for 127.0.0.1: %v", err)
	}
}

func TestNodeReadySince(t *testing.T) {
	started := time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)
	cond := func(status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(heartbeat)},
		}}}
	}
	cases := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"ready now", cond(corev1.ConditionTrue, started.Add(time.Second)), true},
		{"ready in the same second", cond(corev1.ConditionTrue, started.Truncate(time.Second)), true},
		{"ready, from an earlier run", cond(corev1.ConditionTrue, started.Add(-time.Minute)), false},
		{"not ready", cond(corev1.ConditionFalse, started.Add(time.Second)), false},
		{"unknown", cond(corev1.ConditionUnknown, started.Add(time.Second)), false},
		{"no conditions", &corev1.Node{}, false},
	}
	for _, tc := range cases {
		if got, why := nodeReadySince(tc.node, started); got != tc.want {
			t.Errorf("%s: nodeReadySince = %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

// TestRemoveLeftovers: only kubemark's own shapes of path are removed, and
// a runtime socket only when nothing listens on it.
func TestRemoveLeftovers(t *testing.T) {
	root, err := os.MkdirTemp("/tmp", "hollow-kubelet.")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root+"/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir() // not a shape local-up removes
	stale := fmt.Sprintf("/tmp/kubelet_remote_%d.sock", time.Now().UnixNano())
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	live := fmt.Sprintf("/tmp/kubelet_remote_%d1.sock", time.Now().UnixNano())
	l, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	removeLeftovers([]string{root, other, stale, live, "/tmp", ""})
	for path, wantGone := range map[string]bool{root: true, stale: true, other: false, live: false, "/tmp": false} {
		_, err := os.Stat(path)
		if gone := errors.Is(err, os.ErrNotExist); gone != wantGone {
			t.Errorf("%s: removed=%v, want %v", path, gone, wantGone)
		}
	}
}

func TestReadyFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{Options: NewOptions(), dataDir: dir, ReadyFile: ReadyFilePath(dir), Endpoints: []string{"http://127.0.0.1:2379"}}
	if err := c.writeReadyFile(); err != nil {
		t.Fatal(err)
	}
	f, err := ReadReadyFile(c.ReadyFile)
	if err != nil {
		t.Fatal(err)
	}
	if f.PID != os.Getpid() || f.DataDir != dir || !reflect.DeepEqual(f.Etcd.Endpoints, c.Endpoints) || f.Nodes == nil || f.ControllerManager != nil {
		t.Fatalf("ready file read back as %+v", f)
	}
}

// TestPerAPIServerArgs: an apiserver pinned to one etcd member gets only
// that member's URL (--etcd-servers is a list flag: a second one would add
// to the first), and its own flags after the shared ones.
func TestPerAPIServerArgs(t *testing.T) {
	o := NewOptions()
	o.APIServers = 2
	o.PassThrough = []string{"--v=2"}
	o.APIServerEtcdServers = [][]string{nil, {"http://127.0.0.1:2"}}
	o.APIServerArgs = [][]string{nil, {"--audit-log-path=b.log"}}
	c := &Cluster{Options: o, Endpoints: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}}
	flags := func(args []string, prefix string) []string {
		var out []string
		for _, a := range args {
			if strings.HasPrefix(a, prefix) {
				out = append(out, a)
			}
		}
		return out
	}
	a, b := c.apiserverArgs(0, 6443), c.apiserverArgs(1, 6444)
	if got, want := flags(a, "--etcd-servers="), []string{"--etcd-servers=http://127.0.0.1:1,http://127.0.0.1:2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("apiserver 0: %v, want %v", got, want)
	}
	if got, want := flags(b, "--etcd-servers="), []string{"--etcd-servers=http://127.0.0.1:2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("apiserver 1: %v, want %v", got, want)
	}
	if len(flags(a, "--audit-log-path=")) != 0 || b[len(b)-1] != "--audit-log-path=b.log" || b[len(b)-2] != "--v=2" {
		t.Errorf("per-apiserver flags: 0 %v, 1 %v", a, b)
	}
	if errs := o.Validate(); len(errs) != 0 {
		t.Errorf("valid options: %v", errs)
	}
	o.APIServerArgs = [][]string{nil, nil, nil}
	if errs := o.Validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "per-apiserver") {
		t.Errorf("flags for 3 apiservers with --apiservers=2: %v", errs)
	}
}
