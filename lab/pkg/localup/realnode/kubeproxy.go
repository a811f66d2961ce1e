package realnode

// kube-proxy in iptables mode, so that Services work from pods and from
// the host. It is configured to change as little of the host as it can:
// no conntrack table size or timeouts (maxPerCore 0, timeouts 0: it would
// write nf_conntrack's hashsize module parameter, which is no sysctl), no
// route_localnet (localhostNodePorts off), NodePorts on the node IP only,
// and its own oom_score_adj left alone (root here lacks
// CAP_SYS_RESOURCE). What it still changes, its iptables chains, goes with
// the rest of the journal.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/yaml"
)

func (l layout) kubeProxyDir() string    { return filepath.Join(l.dir, "kube-proxy") }
func (l layout) kubeProxyConfig() string { return filepath.Join(l.kubeProxyDir(), "config.yaml") }

// kubeProxySettings are what kube-proxy's configuration depends on.
type kubeProxySettings struct {
	Kubeconfig, NodeName, NodeIP, ClusterCIDR string
	HealthzPort, MetricsPort                  int
}

// renderKubeProxyConfig is a KubeProxyConfiguration with only the fields
// that differ from kube-proxy's defaults.
func renderKubeProxyConfig(s kubeProxySettings) (string, error) {
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"clientConnection":   map[string]any{"kubeconfig": s.Kubeconfig},
		"hostnameOverride":   s.NodeName,
		"bindAddress":        s.NodeIP,
		"healthzBindAddress": "127.0.0.1:" + strconv.Itoa(s.HealthzPort),
		"metricsBindAddress": "127.0.0.1:" + strconv.Itoa(s.MetricsPort),
		"clusterCIDR":        s.ClusterCIDR,
		"detectLocalMode":    "ClusterCIDR",
		"nodePortAddresses":  []string{s.NodeIP + "/32"},
		"oomScoreAdj":        0,
		"iptables":           map[string]any{"localhostNodePorts": false},
		"conntrack": map[string]any{
			"maxPerCore":            0,
			"min":                   0,
			"tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout":   "0s",
		},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	return "# Written by local-up (--real-nodes); rewritten at every start.\n" + string(data), nil
}

// startKubeProxy starts kube-proxy and waits for its /healthz. Pod to
// Service to pod traffic on one bridge needs the bridge's frames to pass
// iptables (br_netfilter's bridge-nf-call-iptables, recorded in the
// journal like every touched sysctl).
func (n *Node) startKubeProxy(ctx context.Context) error {
	if err := os.WriteFile(filepath.Join(procSys, "net/bridge/bridge-nf-call-iptables"), []byte("1\n"), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(n.layout.kubeProxyDir(), 0o755); err != nil {
		return err
	}
	cfg, err := renderKubeProxyConfig(kubeProxySettings{
		Kubeconfig: n.opts.KubeProxyKubeconfig, NodeName: n.opts.NodeName, NodeIP: n.opts.NodeIP,
		ClusterCIDR: n.opts.PodCIDR, HealthzPort: n.opts.ProxyHealthzPort, MetricsPort: n.opts.ProxyMetricsPort,
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.layout.kubeProxyConfig(), []byte(cfg), 0o644); err != nil {
		return err
	}
	c, err := n.opts.Start("kube-proxy-"+n.opts.NodeName, n.opts.KubeProxyBinary, []string{"--config=" + n.layout.kubeProxyConfig(), "--v=2"})
	if err != nil {
		return err
	}
	n.kubeProxy = c
	n.logf("kube-proxy: pid %d, iptables mode, NodePorts on %s", c.Pid(), n.opts.NodeIP)
	url := "http://127.0.0.1:" + strconv.Itoa(n.opts.ProxyHealthzPort) + "/healthz"
	return n.waitChild(ctx, c, "kube-proxy's /healthz", func() (bool, string) { return httpOK(ctx, url) })
}
