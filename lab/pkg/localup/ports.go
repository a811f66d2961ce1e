package localup

import (
	"errors"
	"fmt"

	"github.com/freshcache/freshcache/lab/internal/freeport"
	"github.com/freshcache/freshcache/lab/pkg/etcdlocal"
	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

// pickPorts checks the ports the flags name and picks free ones for the
// rest, on loopback. A kubelet listens on every address (kubemark sets
// that), and a port bound on any address is refused on loopback too, so
// checking loopback catches every listener that would collide.
func (o *Options) pickPorts() (ports, error) {
	var p ports
	taken := map[int]bool{}
	if o.RealNodes > 0 {
		// The real node's fixed ports are no hollow node's to pick.
		for _, p := range []int{realnode.DefaultKubeletPort, realnode.DefaultHealthzPort, realnode.DefaultProxyHealthzPort, realnode.DefaultProxyMetricsPort} {
			taken[p] = true
		}
	}
	for i := 0; o.SecurePort != 0 && i < o.APIServers; i++ {
		port := o.SecurePort + i
		if err := etcdlocal.CheckPortFree(o.BindAddress, port); err != nil {
			return p, fmt.Errorf("kube-apiserver port (--secure-port): %w", err)
		}
		taken[port] = true
		p.apiservers = append(p.apiservers, port)
	}
	free := func() (int, error) {
		for range 32 {
			port, err := freeport.Port(o.BindAddress)
			if err != nil {
				return 0, err
			}
			if !taken[port] {
				taken[port] = true
				return port, nil
			}
		}
		return 0, errors.New("localup: no free port found")
	}
	for len(p.apiservers) < o.APIServers { // --secure-port=0
		port, err := free()
		if err != nil {
			return p, err
		}
		p.apiservers = append(p.apiservers, port)
	}
	var err error
	if o.Controllers {
		if p.controllerManager, err = free(); err != nil {
			return p, err
		}
		if p.scheduler, err = free(); err != nil {
			return p, err
		}
	}
	for i := 0; i < o.Nodes; i++ {
		if o.KubeletPort == 0 {
			port, err := free()
			if err != nil {
				return p, err
			}
			p.kubelets = append(p.kubelets, port)
			continue
		}
		port := o.KubeletPort + i
		if taken[port] {
			return p, fmt.Errorf("hollow node %s's kubelet port (--kubelet-port=%d, node i uses kubelet-port+i): %d is also a --secure-port", o.NodeName(i), o.KubeletPort, port)
		}
		if err := etcdlocal.CheckPortFree("127.0.0.1", port); err != nil {
			return p, fmt.Errorf("hollow node %s's kubelet port (--kubelet-port=%d, node i uses kubelet-port+i): %w", o.NodeName(i), o.KubeletPort, err)
		}
		taken[port] = true
		p.kubelets = append(p.kubelets, port)
	}
	return p, nil
}
