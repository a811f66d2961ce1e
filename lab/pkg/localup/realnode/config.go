package realnode

// The files the node's containerd, CNI plugins and kubelet read, rendered
// from the layout (every path under Options.Dir) by pure functions.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// layout names every file and directory of a node under its Dir.
type layout struct {
	dir string
}

func (l layout) containerdDir() string    { return filepath.Join(l.dir, "containerd") }
func (l layout) containerdConfig() string { return filepath.Join(l.containerdDir(), "config.toml") }
func (l layout) containerdRoot() string   { return filepath.Join(l.containerdDir(), "root") }
func (l layout) containerdState() string  { return filepath.Join(l.containerdDir(), "state") }
func (l layout) containerdSocket() string { return filepath.Join(l.containerdDir(), "containerd.sock") }
func (l layout) runcRoot() string         { return filepath.Join(l.containerdDir(), "runc") }
func (l layout) containerdOpt() string    { return filepath.Join(l.containerdDir(), "opt") }
func (l layout) cniConfDir() string       { return filepath.Join(l.dir, "cni", "net.d") }
func (l layout) cniConfig() string        { return filepath.Join(l.cniConfDir(), "10-freshcache.conflist") }
func (l layout) cniIPAMDir() string       { return filepath.Join(l.dir, "cni", "networks") }
func (l layout) kubeletDir() string       { return filepath.Join(l.dir, "kubelet") }
func (l layout) kubeletConfig() string    { return filepath.Join(l.kubeletDir(), "config.yaml") }
func (l layout) kubeletRoot() string      { return filepath.Join(l.kubeletDir(), "root") }
func (l layout) podLogsDir() string       { return filepath.Join(l.kubeletDir(), "pod-logs") }
func (l layout) imagesDir() string        { return filepath.Join(l.dir, "images") }

// maxSocketPath is the longest unix socket path Linux takes (108 bytes
// with the terminating NUL), less room for containerd's ".ttrpc" suffix.
const maxSocketPath = maxUnixPath - len(".ttrpc")

// maxUnixPath is the longest path a unix socket may have: 108 bytes with
// the terminating NUL.
const maxUnixPath = 107

// podResourcesSocket is the longest name the kubelet gives the temporary
// socket it binds before renaming it to pod-resources/kubelet.sock: the
// directory and ten random digits.
func (l layout) podResourcesSocket() string {
	return filepath.Join(l.kubeletRoot(), "pod-resources", "0123456789")
}

// containerdConfigTemplate is containerd 1.6's version 2 configuration.
// Every path is the node's own, so nothing of a system containerd is
// touched: root, state, sockets, the runc state of the containers, the
// network namespaces (under the state directory) and the CNI
// configuration. restrict_oom_score_adj: root here lacks
// CAP_SYS_RESOURCE, and the pause container's oom_score_adj of -998 would
// fail every sandbox. The CRI plugin pulls nothing from a registry, so
// image pulls fail at once: every image the node runs is imported.
var containerdConfigTemplate = template.Must(template.New("containerd").Parse(`# Written by local-up (--real-nodes); rewritten at every start.
version = 2
root = {{.Root | printf "%q"}}
state = {{.State | printf "%q"}}
oom_score = 0

[grpc]
  address = {{.Socket | printf "%q"}}

[ttrpc]
  address = {{.Socket | printf "%s.ttrpc" | printf "%q"}}

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = {{.Opt | printf "%q"}}

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = {{.SandboxImage | printf "%q"}}
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_selinux = false
    disable_apparmor = true
    systemd_cgroup = false

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = {{.CNIBinDir | printf "%q"}}
      conf_dir = {{.CNIConfDir | printf "%q"}}
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          Root = {{.RuncRoot | printf "%q"}}
          SystemdCgroup = false
`))

// containerdConfigData fills containerdConfigTemplate.
type containerdConfigData struct {
	Root, State, Socket, Opt, RuncRoot string
	SandboxImage                       string
	CNIBinDir, CNIConfDir              string
}

func renderContainerdConfig(l layout, cniBinDir string) (string, error) {
	var b strings.Builder
	err := containerdConfigTemplate.Execute(&b, containerdConfigData{
		Root: l.containerdRoot(), State: l.containerdState(), Socket: l.containerdSocket(),
		Opt: l.containerdOpt(), RuncRoot: l.runcRoot(), SandboxImage: PauseImage,
		CNIBinDir: cniBinDir, CNIConfDir: l.cniConfDir(),
	})
	return b.String(), err
}

// cniConfList is the pod network: a bridge on the host with the node's pod
// CIDR, its gateway on the bridge. containerd adds the loopback plugin
// itself. No masquerading: pods talk to the host and each other only,
// there being nowhere else to reach. The firewall plugin (iptables
// backend) accepts each pod's traffic in FORWARD: a Service's packets
// from one pod to another on the bridge cross FORWARD (br_netfilter), and
// a host running Docker has set that chain's policy to DROP. Its chains
// go with the rest of the node's iptables changes at exit (iptables.go).
type cniConfList struct {
	CNIVersion string      `json:"cniVersion"`
	Name       string      `json:"name"`
	Plugins    []cniPlugin `json:"plugins"`
}

type cniPlugin struct {
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge,omitempty"`
	IsGateway   bool     `json:"isGateway,omitempty"`
	IPMasq      bool     `json:"ipMasq,omitempty"`
	HairpinMode bool     `json:"hairpinMode,omitempty"`
	Backend     string   `json:"backend,omitempty"`
	IPAM        *cniIPAM `json:"ipam,omitempty"`
}

type cniIPAM struct {
	Type    string                `json:"type"`
	Ranges  [][]map[string]string `json:"ranges"`
	Routes  []map[string]string   `json:"routes"`
	DataDir string                `json:"dataDir"`
}

func renderCNIConfig(l layout, bridge, podCIDR string) (string, error) {
	conf := cniConfList{
		CNIVersion: "1.0.0",
		Name:       "freshcache",
		Plugins: []cniPlugin{{
			Type: "bridge", Bridge: bridge, IsGateway: true, HairpinMode: true,
			IPAM: &cniIPAM{
				Type:   "host-local",
				Ranges: [][]map[string]string{{{"subnet": podCIDR}}},
				Routes: []map[string]string{{"dst": "0.0.0.0/0"}},
				// Not /var/lib/cni/networks: nothing of the node outside Dir.
				DataDir: l.cniIPAMDir(),
			},
		}, {
			Type: "firewall", Backend: "iptables",
		}},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	return string(data) + "\n", err
}

// kubeletSettings are what the kubelet configuration depends on besides
// the layout.
type kubeletSettings struct {
	NodeIP                  string
	Port, HealthzPort       int
	ClientCAFile            string
	TLSCertFile, TLSKeyFile string
	PodCIDR                 string
	ClusterDNS              string
}

// renderKubeletConfig is the KubeletConfiguration of a real node:
// authenticated and authorized like a production kubelet (x509 client
// certificates from the cluster CA, webhook authentication and
// authorization against the apiserver, no anonymous access, no read-only
// port), on this host's cgroup v1 with the cgroupfs driver, serving on the
// node IP only, with every directory under the node's Dir.
func renderKubeletConfig(l layout, s kubeletSettings) (string, error) {
	cfg := kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Address:  s.NodeIP,
		Port:     int32(s.Port),
		// The read-only port serves pod specs unauthenticated.
		ReadOnlyPort:       0,
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        ptr.To(int32(s.HealthzPort)),
		TLSCertFile:        s.TLSCertFile,
		TLSPrivateKeyFile:  s.TLSKeyFile,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: s.ClientCAFile},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		// This host has cgroup v1 only, which the kubelet refuses unless
		// told otherwise, and no systemd.
		FailCgroupV1:             ptr.To(false),
		CgroupDriver:             "cgroupfs",
		ContainerRuntimeEndpoint: "unix://" + l.containerdSocket(),
		PodLogsDir:               l.podLogsDir(),
		PodCIDR:                  s.PodCIDR,
		ClusterDomain:            "cluster.local",
		// The images are imported, never pulled; nothing should be
		// collected from under the node.
		ImageGCHighThresholdPercent: ptr.To(int32(100)),
		ImageGCLowThresholdPercent:  ptr.To(int32(99)),
		// The disk is shared with builds and benchmarks: evict only when
		// it is really full, not at the default 10-15% free.
		EvictionHard: map[string]string{
			"memory.available":  "100Mi",
			"nodefs.available":  "1%",
			"imagefs.available": "1%",
		},
		// No swap here; a host that has some still runs the node.
		FailSwapOn:          ptr.To(false),
		ResolverConfig:      ptr.To("/etc/resolv.conf"),
		StaticPodPath:       "",
		RegisterNode:        ptr.To(true),
		SerializeImagePulls: ptr.To(true),
	}
	if s.ClusterDNS != "" {
		cfg.ClusterDNS = []string{s.ClusterDNS}
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	return "# Written by local-up (--real-nodes); rewritten at every start.\n" + string(data), nil
}

// kubeletArgs are the kubelet's flags: what the configuration file cannot
// say.
func kubeletArgs(l layout, nodeName, nodeIP, kubeconfig string, verbosity int, gates map[string]bool) []string {
	args := []string{
		"--config=" + l.kubeletConfig(),
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + l.kubeletRoot(),
		"--hostname-override=" + nodeName,
		"--node-ip=" + nodeIP,
		"--v=" + strconv.Itoa(verbosity),
	}
	if len(gates) > 0 {
		// A flag, not the configuration's featureGates: the kubelet wires
		// its flag's gates into client-go's before it builds any client.
		args = append(args, "--feature-gates="+FeatureGatesFlag(gates))
	}
	return args
}

// FeatureGatesFlag renders gates as --feature-gates wants them, sorted
// by name: A=true,B=false.
func FeatureGatesFlag(gates map[string]bool) string {
	names := make([]string, 0, len(gates))
	for name := range gates {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + "=" + strconv.FormatBool(gates[name])
	}
	return strings.Join(parts, ",")
}

// String describes a layout in messages.
func (l layout) String() string { return fmt.Sprintf("real node files under %s", l.dir) }
