package localup

// kube-controller-manager and kube-scheduler: unmodified upstream binaries,
// each with its own client certificate, so RBAC's bootstrap roles for
// system:kube-controller-manager and system:kube-scheduler are what they
// run with, as in a real cluster.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// Component is a supervised kube-controller-manager or kube-scheduler.
type Component struct {
	*Process
	// URL is the component's own https endpoint (/healthz, /metrics).
	URL string
	// User is the identity its client certificate carries.
	User string
	// Kubeconfig is the file it talks to the apiserver with.
	Kubeconfig string
}

const (
	controllerManagerName = "kube-controller-manager"
	schedulerName         = "kube-scheduler"
)

// componentSpec is what differs between the controller-manager and the
// scheduler.
type componentSpec struct {
	name   string
	user   string
	binary string
	port   int
	args   func(c *Cluster) []string
}

func (c *Cluster) controllerManagerSpec(binary string, port int) componentSpec {
	return componentSpec{
		name:   controllerManagerName,
		user:   ControllerManagerUser,
		binary: binary,
		port:   port,
		// What a real cluster (kubeadm) gives it: the key the apiserver
		// checks service-account tokens against (--service-account-key-file),
		// the CA that kube-root-ca.crt publishes and that signs CSRs, and one
		// service account per controller, so each runs with its own RBAC role.
		args: func(c *Cluster) []string {
			return []string{
				"--service-account-private-key-file=" + c.PKI.ServiceAccountKey(),
				"--root-ca-file=" + c.PKI.CACert(),
				"--cluster-signing-cert-file=" + c.PKI.CACert(),
				"--cluster-signing-key-file=" + c.PKI.CAKey(),
				"--use-service-account-credentials=true",
				"--service-cluster-ip-range=" + serviceClusterIPRange,
			}
		},
	}
}

func (c *Cluster) schedulerSpec(binary string, port int) componentSpec {
	return componentSpec{name: schedulerName, user: SchedulerUser, binary: binary, port: port, args: func(*Cluster) []string { return nil }}
}

// startComponent writes the component's credentials and kubeconfig (for
// the first apiserver) and starts it. Its secure port serves /healthz to
// anyone (upstream's --authorization-always-allow-paths default), and
// delegates other requests' authentication and authorization to the
// apiserver with its own identity.
func (c *Cluster) startComponent(s componentSpec) (*Component, error) {
	if err := c.PKI.EnsureClient(s.name, s.user, nil); err != nil {
		return nil, err
	}
	if err := c.PKI.EnsureServing(s.name, c.servingHosts()); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(c.dataDir, "kubeconfigs", s.name+".kubeconfig")
	if err := WriteClientKubeconfig(kubeconfig, c.APIServers[0].URL, c.PKI, s.name, s.user); err != nil {
		return nil, err
	}
	args := c.componentArgs(s, kubeconfig)
	p, err := StartProcess(s.name, s.binary, filepath.Join(c.dataDir, "logs", s.name+".log"), args)
	if err != nil {
		return nil, err
	}
	c.track(p)
	return &Component{
		Process:    p,
		URL:        "https://" + net.JoinHostPort(c.Options.BindAddress, strconv.Itoa(s.port)),
		User:       s.user,
		Kubeconfig: kubeconfig,
	}, nil
}

// componentArgs are s's flags, with kubeconfig as its identity.
func (c *Cluster) componentArgs(s componentSpec, kubeconfig string) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=" + c.Options.BindAddress,
		"--secure-port=" + strconv.Itoa(s.port),
		"--tls-cert-file=" + c.PKI.ServingCertFor(s.name),
		"--tls-private-key-file=" + c.PKI.ServingKeyFor(s.name),
		"--leader-elect=" + strconv.FormatBool(c.Options.LeaderElect),
	}
	if q := c.Options.ControllerQPS; q > 0 {
		v := strconv.FormatFloat(q, 'f', -1, 64)
		args = append(args, "--kube-api-qps="+v, "--kube-api-burst="+strconv.Itoa(int(math.Ceil(q))))
	}
	args = append(args, s.args(c)...)
	return args
}

// servingHosts are the names the controllers' serving certificates are
// valid for.
func (c *Cluster) servingHosts() []string {
	hosts := []string{"127.0.0.1", "::1", "localhost"}
	if c.Options.BindAddress != "127.0.0.1" && c.Options.BindAddress != "::1" {
		hosts = append(hosts, c.Options.BindAddress)
	}
	return hosts
}

// waitHealthy waits for the component's /healthz, verified with the CA.
func (c *Cluster) waitHealthy(ctx context.Context, comp *Component) error {
	tlsCfg, err := c.caTLSConfig()
	if err != nil {
		return err
	}
	if err := comp.WaitHealthy(ctx, tlsCfg, comp.URL+"/healthz", c.Options.ReadyTimeout); err != nil {
		return comp.withLog(err)
	}
	return nil
}

func (c *Cluster) caTLSConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(c.PKI.CACert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("localup: no certificate in %s", c.PKI.CACert())
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
