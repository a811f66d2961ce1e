package realnode

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/freshcache/freshcache/lab/internal/errtest"
)

func TestRenderContainerdConfig(t *testing.T) {
	l := layout{dir: "/data/real-0"}
	got, err := renderContainerdConfig(l, "/usr/lib/cni")
	if err != nil {
		t.Fatal(err)
	}
	// Each line that keeps the node's containerd off the system's paths,
	// or that this host needs.
	for _, want := range []string{
		`root = "/data/real-0/containerd/root"`,
		`state = "/data/real-0/containerd/state"`,
		`address = "/data/real-0/containerd/containerd.sock"`,
		`address = "/data/real-0/containerd/containerd.sock.ttrpc"`,
		`path = "/data/real-0/containerd/opt"`,
		`Root = "/data/real-0/containerd/runc"`,
		`conf_dir = "/data/real-0/cni/net.d"`,
		`bin_dir = "/usr/lib/cni"`,
		`sandbox_image = "registry.k8s.io/pause:3.10.2"`,
		`restrict_oom_score_adj = true`,
		`netns_mounts_under_state_dir = true`,
		`stream_server_address = "127.0.0.1"`,
		`SystemdCgroup = false`,
	} {
		if !strings.Contains(got, "\n"+strings.Repeat(" ", indentOf(got, want))+want+"\n") {
			t.Errorf("containerd config lacks the line %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "/run/containerd") || strings.Contains(got, "/var/lib/containerd") || strings.Contains(got, "/etc/cni") {
		t.Errorf("containerd config names a system path:\n%s", got)
	}
}

// indentOf is the indentation of the line holding want, or 0.
func indentOf(text, want string) int {
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimLeft(line, " ") == want {
			return len(line) - len(strings.TrimLeft(line, " "))
		}
	}
	return 0
}

func TestRenderCNIConfig(t *testing.T) {
	tests := []struct {
		bridge, cidr string
	}{
		{"freshcache0", "10.244.0.0/24"},
		{"br-test", "192.168.50.0/26"},
	}
	for _, tt := range tests {
		t.Run(tt.bridge, func(t *testing.T) {
			out, err := renderCNIConfig(layout{dir: "/d"}, tt.bridge, tt.cidr)
			if err != nil {
				t.Fatal(err)
			}
			var conf struct {
				CNIVersion string `json:"cniVersion"`
				Plugins    []struct {
					Type      string `json:"type"`
					Bridge    string `json:"bridge"`
					IsGateway bool   `json:"isGateway"`
					IPMasq    bool   `json:"ipMasq"`
					Backend   string `json:"backend"`
					IPAM      struct {
						Type    string                `json:"type"`
						Ranges  [][]map[string]string `json:"ranges"`
						DataDir string                `json:"dataDir"`
					} `json:"ipam"`
				} `json:"plugins"`
			}
			if err := json.Unmarshal([]byte(out), &conf); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			// The bridge, then the firewall plugin: on a host whose FORWARD
			// policy is DROP (Docker sets it), pod to pod traffic through a
			// Service crosses FORWARD and needs its accept rules.
			if conf.CNIVersion != "1.0.0" || len(conf.Plugins) != 2 {
				t.Fatalf("conf = %+v", conf)
			}
			if fw := conf.Plugins[1]; fw.Type != "firewall" || fw.Backend != "iptables" {
				t.Errorf("second plugin = %+v, want the firewall plugin with the iptables backend", fw)
			}
			p := conf.Plugins[0]
			if p.Type != "bridge" || p.Bridge != tt.bridge || !p.IsGateway || p.IPMasq {
				t.Errorf("bridge plugin = %+v", p)
			}
			if p.IPAM.Type != "host-local" || p.IPAM.Ranges[0][0]["subnet"] != tt.cidr || p.IPAM.DataDir != "/d/cni/networks" {
				t.Errorf("ipam = %+v", p.IPAM)
			}
		})
	}
}

func TestRenderKubeletConfig(t *testing.T) {
	l := layout{dir: "/d"}
	out, err := renderKubeletConfig(l, kubeletSettings{
		NodeIP: "10.200.0.1", Port: 10250, HealthzPort: 10248, ClientCAFile: "/pki/ca.crt",
		TLSCertFile: "/pki/k.crt", TLSKeyFile: "/pki/k.key", PodCIDR: "10.244.0.0/24",
	})
	cfg := decodeStrict[kubeletv1beta1.KubeletConfiguration](t, out, err)
	checkFields(t, []fieldCheck{
		{"kind", cfg.Kind, "KubeletConfiguration"},
		{"apiVersion", cfg.APIVersion, "kubelet.config.k8s.io/v1beta1"},
		{"address", cfg.Address, "10.200.0.1"},
		{"port", cfg.Port, int32(10250)},
		{"readOnlyPort", cfg.ReadOnlyPort, int32(0)},
		{"healthz", cfg.HealthzBindAddress, "127.0.0.1"},
		{"healthzPort", *cfg.HealthzPort, int32(10248)},
		{"failCgroupV1", *cfg.FailCgroupV1, false},
		{"cgroupDriver", cfg.CgroupDriver, "cgroupfs"},
		{"anonymous", *cfg.Authentication.Anonymous.Enabled, false},
		{"webhook authn", *cfg.Authentication.Webhook.Enabled, true},
		{"client CA", cfg.Authentication.X509.ClientCAFile, "/pki/ca.crt"},
		{"authz", cfg.Authorization.Mode, kubeletv1beta1.KubeletAuthorizationModeWebhook},
		{"runtime", cfg.ContainerRuntimeEndpoint, "unix:///d/containerd/containerd.sock"},
		{"podLogsDir", cfg.PodLogsDir, "/d/kubelet/pod-logs"},
		{"tls cert", cfg.TLSCertFile, "/pki/k.crt"},
	})
	args := strings.Join(kubeletArgs(l, "real-0", "10.200.0.1", "/kc", 2, nil), " ")
	for _, want := range []string{"--config=/d/kubelet/config.yaml", "--root-dir=/d/kubelet/root", "--node-ip=10.200.0.1", "--hostname-override=real-0", "--kubeconfig=/kc"} {
		if !strings.Contains(args, want) {
			t.Errorf("kubelet args %q lack %s", args, want)
		}
	}
	if strings.Contains(args, "--feature-gates") {
		t.Errorf("kubelet args %q set feature gates that nobody asked for", args)
	}
}

func TestKubeletFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		gates map[string]bool
		want  string // the --feature-gates flag, "" for none
	}{
		{nil, ""},
		{map[string]bool{}, ""},
		{map[string]bool{"WatchListClient": false}, "--feature-gates=WatchListClient=false"},
		{map[string]bool{"WatchListClient": false, "AllAlpha": true}, "--feature-gates=AllAlpha=true,WatchListClient=false"},
	} {
		var got string
		for _, a := range kubeletArgs(layout{dir: "/d"}, "real-0", "10.200.0.1", "/kc", 2, tc.gates) {
			if strings.HasPrefix(a, "--feature-gates") {
				if got != "" {
					t.Errorf("%v: --feature-gates given twice", tc.gates)
				}
				got = a
			}
		}
		if got != tc.want {
			t.Errorf("%v: flag %q, want %q", tc.gates, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	valid := func() Options {
		return Options{
			Dir: "/data/real-0", NodeName: "real-0", Kubeconfig: "/kc", CACert: "/ca", ServingCert: "/s.crt", ServingKey: "/s.key",
			KubeletBinary: "/bin/kubelet", PauseBinary: "/bin/pause",
			Start: func(string, string, []string) (Child, error) { return nil, nil },
		}
	}
	tests := []struct {
		name   string
		change func(*Options)
		want   string // "" for valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"relative dir", func(o *Options) { o.Dir = "data" }, `Dir "data" must be an absolute path`},
		{"socket path too long", func(o *Options) { o.Dir = "/" + strings.Repeat("d", 90) }, "over the 101 that unix sockets allow"},
		// containerd's socket fits (98 bytes), the kubelet's does not (109).
		{"kubelet socket path too long", func(o *Options) { o.Dir = "/" + strings.Repeat("d", 70) }, "pod-resources socket"},
		{"loopback node IP", func(o *Options) { o.NodeIP = "127.0.0.5" }, `node IP "127.0.0.5"`},
		{"IPv6 node IP", func(o *Options) { o.NodeIP = "fd00::1" }, `node IP "fd00::1"`},
		{"node IP in the pod CIDR", func(o *Options) { o.NodeIP = "10.244.0.9" }, "inside the pod CIDR"},
		{"tiny pod CIDR", func(o *Options) { o.PodCIDR = "10.1.0.0/30" }, "too small"},
		{"bad pod CIDR", func(o *Options) { o.PodCIDR = "10.1.0.0" }, `pod CIDR "10.1.0.0"`},
		{"long bridge name", func(o *Options) { o.Bridge = "freshcache-bridge0" }, "bridge name"},
		{"same ports", func(o *Options) { o.HealthzPort = 10250 }, "port 10250 is given twice"},
		{"kube-proxy port of the kubelet", func(o *Options) { o.ProxyMetricsPort = 10248 }, "port 10248 is given twice"},
		{"kube-proxy without kubeconfig", func(o *Options) { o.KubeProxyBinary = "/bin/kube-proxy" }, "KubeProxyKubeconfig is empty"},
		{"kube-proxy", func(o *Options) { o.KubeProxyBinary, o.KubeProxyKubeconfig = "/bin/kube-proxy", "/kp" }, ""},
		{"port out of range", func(o *Options) { o.KubeletPort = 70000 }, "kubelet port 70000"},
		{"no kubelet", func(o *Options) { o.KubeletBinary = "" }, "KubeletBinary is empty"},
		{"no starter", func(o *Options) { o.Start = nil }, "Start is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.change(&o)
			errtest.Want(t, "Validate", o.Validate(), tt.want)
		})
	}
}

func TestRenderKubeProxyConfig(t *testing.T) {
	out, err := renderKubeProxyConfig(kubeProxySettings{
		Kubeconfig: "/kp.kubeconfig", NodeName: "real-0", NodeIP: "10.200.0.1", ClusterCIDR: "10.244.0.0/24",
		HealthzPort: 10256, MetricsPort: 10249,
	})
	cfg := decodeStrict[kubeproxyv1alpha1.KubeProxyConfiguration](t, out, err)
	checkFields(t, []fieldCheck{
		{"kind", cfg.Kind, "KubeProxyConfiguration"},
		{"mode", string(cfg.Mode), "iptables"},
		{"kubeconfig", cfg.ClientConnection.Kubeconfig, "/kp.kubeconfig"},
		{"hostname", cfg.HostnameOverride, "real-0"},
		{"healthz", cfg.HealthzBindAddress, "127.0.0.1:10256"},
		{"metrics", cfg.MetricsBindAddress, "127.0.0.1:10249"},
		{"cluster CIDR", cfg.ClusterCIDR, "10.244.0.0/24"},
		{"node ports", strings.Join(cfg.NodePortAddresses, ","), "10.200.0.1/32"},
		// What keeps it off the host's settings.
		{"localhost node ports (route_localnet)", *cfg.IPTables.LocalhostNodePorts, false},
		{"conntrack max per core", *cfg.Conntrack.MaxPerCore, int32(0)},
		{"conntrack established timeout", cfg.Conntrack.TCPEstablishedTimeout.Duration, time.Duration(0)},
		{"conntrack close-wait timeout", cfg.Conntrack.TCPCloseWaitTimeout.Duration, time.Duration(0)},
		{"oom score", *cfg.OOMScoreAdj, int32(0)},
	})
}

// decodeStrict fails t unless out, rendered without err, decodes strictly
// (no unknown or duplicate field) into a T.
func decodeStrict[T any](t *testing.T, out string, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var cfg T
	if err := yaml.UnmarshalStrict([]byte(out), &cfg); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	return cfg
}

// fieldCheck is one field of a rendered config and the value it must have.
type fieldCheck struct {
	what      string
	got, want any
}

// checkFields fails t for every field whose value is not the wanted one.
func checkFields(t *testing.T, checks []fieldCheck) {
	t.Helper()
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}
