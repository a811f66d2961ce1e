package localup

// The kubernetes Service (default/kubernetes, the first address of the
// service range, port 443): how in-cluster clients find the apiserver.
//
// Hollow nodes have no pods that could dial it, so without real nodes the
// apiservers listen on loopback only, advertise it, and the endpoint
// reconciler is off (kube-apiserver refuses loopback addresses in the
// Service's endpoints). With real nodes, the first apiserver advertises
// the node IP and keeps the Service's endpoints with upstream's default
// lease reconciler; kube-proxy then sends 10.0.0.1:443 to nodeIP:<its
// port>, which pods reach through the CNI bridge, and local-up's forwarder
// (forward.go) carries it to the apiserver on --bind-address. The other apiservers
// stay on loopback with the reconciler off: they listen on other ports of
// the same host, and the Service has one port, so two reconcilers would
// rewrite each other's endpoint port.
//
// The lease reconciler corrects the endpoint's addresses on every pass but
// its port only when it removes its own lease at start, which fails when
// no lease is left; after a crash of local-up (its embedded etcd goes
// with it, so the apiserver cannot clean up) the next apiserver, at the
// same IP but on another port (--secure-port=0), would keep the old port
// for good. local-up waits for the endpoint before it is ready and
// deletes an Endpoints object with the wrong port once, for the reconciler
// to write it again.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// advertisedAPIServer is the apiserver (0-based) behind the kubernetes
// Service when real nodes run.
const advertisedAPIServer = 0

// apiserverServingArgs are apiserver i's address flags.
func (o *Options) apiserverServingArgs(i int) []string {
	if o.RealNodes == 0 || i != advertisedAPIServer {
		return []string{
			"--bind-address=" + o.BindAddress,
			"--advertise-address=" + o.BindAddress,
			"--endpoint-reconciler-type=none",
		}
	}
	return []string{
		"--bind-address=" + o.BindAddress,
		"--advertise-address=" + o.RealNodeIP,
		"--endpoint-reconciler-type=lease",
	}
}

// apiserverHosts are the names the apiservers' serving certificate must be
// valid for: DefaultHosts, and with real nodes the node IP, which pods
// dial through the kubernetes Service.
func (o *Options) apiserverHosts() []string {
	hosts := DefaultHosts()
	if o.RealNodes > 0 {
		hosts = append(hosts, o.RealNodeIP)
	}
	return hosts
}

// kubernetesServiceIP is the ClusterIP kube-apiserver gives the kubernetes
// Service: the first address after the service range's network address.
// DefaultHosts names it (TestDefaultHostsNameTheKubernetesService).
func kubernetesServiceIP(cidr string) (net.IP, error) {
	_, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("localup: service range %q: %w", cidr, err)
	}
	ip := append(net.IP(nil), ipnet.IP...)
	for i := len(ip) - 1; i >= 0; i-- {
		ip[i]++
		if ip[i] != 0 {
			break
		}
	}
	if !ipnet.Contains(ip) {
		return nil, fmt.Errorf("localup: service range %q has no room for the kubernetes Service", cidr)
	}
	return ip, nil
}

// kubernetesServiceName is the Service (and Endpoints and EndpointSlice)
// in namespace default that kube-apiserver keeps.
const kubernetesServiceName = "kubernetes"

// waitKubernetesEndpoint waits until the kubernetes Service's endpoint is
// the advertised apiserver at the node IP and port, deleting the
// Endpoints object once if it names that IP at another port (above).
func (c *Cluster) waitKubernetesEndpoint(ctx context.Context, port int) error {
	cfg := RESTConfig(c.APIServers[advertisedAPIServer].URL, c.PKI)
	cfg.WarningHandler = rest.NoWarnings{} // v1 Endpoints is deprecated, and it is what the reconciler writes
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	want := net.JoinHostPort(c.Options.RealNodeIP, strconv.Itoa(port))
	deleted := false
	return c.waitFor(ctx, "the kubernetes Service's endpoint "+want, func() (bool, string) {
		list, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + kubernetesServiceName})
		if err != nil {
			return false, err.Error()
		}
		got := sliceEndpoints(list.Items)
		switch endpointVerdict(got, c.Options.RealNodeIP, want) {
		case endpointOK:
			return true, ""
		case endpointStalePort:
			if !deleted {
				err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Delete(ctx, kubernetesServiceName, metav1.DeleteOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return false, "deleting the stale endpoints " + strings.Join(got, ",") + ": " + err.Error()
				}
				deleted = true
			}
		}
		return false, "endpoints: [" + strings.Join(got, ",") + "]"
	})
}

// sliceEndpoints lists the "ip:port" pairs of the slices' https ports,
// sorted.
func sliceEndpoints(items []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range items {
		for _, p := range s.Ports {
			if p.Port == nil || (p.Name != nil && *p.Name != "https") {
				continue
			}
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					out = append(out, net.JoinHostPort(a, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

type endpointState int

const (
	// endpointWaiting: not there yet (the reconciler writes it within
	// its interval, 10 s).
	endpointWaiting endpointState = iota
	// endpointOK: exactly the advertised apiserver.
	endpointOK
	// endpointStalePort: the node IP at another port, which the lease
	// reconciler keeps.
	endpointStalePort
)

// endpointVerdict judges the kubernetes Service's endpoints got against
// want ("nodeIP:port").
func endpointVerdict(got []string, nodeIP, want string) endpointState {
	if len(got) == 1 && got[0] == want {
		return endpointOK
	}
	for _, g := range got {
		if host, _, err := net.SplitHostPort(g); err == nil && host == nodeIP && g != want {
			return endpointStalePort
		}
	}
	return endpointWaiting
}
