package localup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// resolveBinaries finds every program this run needs, before any starts.
func (o *Options) resolveBinaries() (binaries, error) {
	var b binaries
	var errs []error
	resolve := func(dst *string, flag, given string) {
		p, err := resolveBinary(flag, given)
		if err != nil {
			errs = append(errs, err)
		}
		*dst = p
	}
	resolve(&b.apiserver, "kube-apiserver", o.Binary)
	if o.Controllers {
		resolve(&b.controllerManager, "kube-controller-manager", o.ControllerManagerBinary)
		resolve(&b.scheduler, "kube-scheduler", o.SchedulerBinary)
	}
	if o.Nodes > 0 {
		resolve(&b.kubemark, "kubemark", o.KubemarkBinary)
	}
	if o.Kwok.Nodes > 0 {
		resolve(&b.kwok, "kwok", o.KwokBinary)
	}
	if o.RealNodes > 0 {
		resolve(&b.kubelet, "kubelet", o.KubeletBinary)
		resolve(&b.pause, "freshcache-pause", o.PauseBinary)
		if o.RealNodeKubeProxy {
			resolve(&b.kubeProxy, "kube-proxy", o.KubeProxyBinary)
		}
		if o.RealNodeDNS {
			resolve(&b.coredns, "coredns", o.CoreDNSBinary)
		}
		if o.RealNodeE2EImages {
			resolve(&b.agnhost, "agnhost", o.AgnhostBinary)
		}
	}
	return b, errors.Join(errs...)
}

// resolveBinary finds the program called flag (also the name of the flag
// that sets its path): the given path, else next to local-up, else $PATH.
func resolveBinary(flag, given string) (string, error) {
	if given != "" {
		if _, err := os.Stat(given); err != nil {
			return "", fmt.Errorf("--%s=%s: %w", flag, given, err)
		}
		return given, nil
	}
	if self, err := os.Executable(); err == nil {
		candidate := filepath.Join(filepath.Dir(self), flag)
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
	}
	if p, err := lookPath(flag); err == nil {
		return p, nil
	}
	hint := ""
	switch flag {
	case "kube-controller-manager", "kube-scheduler":
		hint = ", or --controllers=false"
	case "kubemark":
		hint = ", or --nodes=0"
	case "kubelet", "freshcache-pause":
		hint = ", or --real-nodes=0"
	case "kube-proxy":
		hint = ", or --real-node-kube-proxy=false"
	case "kwok":
		return "", errors.New("no kwok binary next to local-up or on $PATH; run `make build-kwok` (tools/kwok), or pass --kwok-nodes=0")
	case "agnhost":
		return "", errors.New("no agnhost binary next to local-up or on $PATH; run `make build-e2e-suite`, or pass --real-node-e2e-images=false")
	case "coredns":
		return "", errors.New("no coredns binary next to local-up or on $PATH; run `make build-coredns` (tools/coredns), or pass --real-node-dns=false")
	}
	return "", fmt.Errorf("no %s binary next to local-up or on $PATH; run `make build` or pass --%s%s", flag, flag, hint)
}
