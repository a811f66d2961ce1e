// Command coredns is CoreDNS v1.14.6 (the version kubeadm v1.37 deploys)
// with only the plugins local-up's real nodes and kubeadm's Corefile (the
// offline kind cluster, hack/kind-images.sh) use: reload, bind, ready,
// health, prometheus, errors, log, loadbalance, cache, kubernetes, loop and
// forward, in CoreDNS's own order. Upstream's build links every plugin (clouds' DNS services among
// them), which would bring their SDKs into this module for nothing.
//
// make build-coredns builds it statically into _output/bin; local-up
// --real-nodes packs it into registry.k8s.io/coredns/coredns:v1.14.6
// (lab/pkg/localup/realnode) and deploys it (lab/pkg/localup/coredns.go). It is a
// module of its own so that the product's go.mod does not carry CoreDNS's
// requirements.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The plugins' order within a server block, as CoreDNS's plugin.cfg
// has them: it decides which plugin sees a query first, whatever the
// Corefile's order.
func init() {
	dnsserver.Directives = []string{"reload", "bind", "ready", "health", "prometheus", "errors", "log", "loadbalance", "cache", "kubernetes", "loop", "forward"}
}

func main() { coremain.Run() }
