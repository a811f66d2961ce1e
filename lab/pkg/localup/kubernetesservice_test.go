package localup

import (
	"crypto/x509"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// TestAPIServerServingArgs: without real nodes every apiserver stays on
// loopback with the endpoint reconciler off; with them the first also
// serves on and advertises the node IP and keeps the kubernetes Service's
// endpoints, and the others stay as they were.
func TestAPIServerServingArgs(t *testing.T) {
	loopback := []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"}
	tests := []struct {
		name       string
		realNodes  int
		apiservers int
		nodeIP     string
		want       [][]string // per apiserver
	}{
		{name: "hollow only", apiservers: 1, want: [][]string{loopback}},
		{name: "hollow only, two apiservers", apiservers: 2, want: [][]string{loopback, loopback}},
		{
			name: "real node", realNodes: 1, apiservers: 1, nodeIP: "10.200.0.1",
			want: [][]string{{"--bind-address=127.0.0.1", "--advertise-address=10.200.0.1", "--endpoint-reconciler-type=lease"}},
		},
		{
			name: "real node, two apiservers: only the first is advertised", realNodes: 1, apiservers: 2, nodeIP: "10.200.0.1",
			want: [][]string{{"--bind-address=127.0.0.1", "--advertise-address=10.200.0.1", "--endpoint-reconciler-type=lease"}, loopback},
		},
		{
			name: "another node IP", realNodes: 1, apiservers: 1, nodeIP: "192.168.77.5",
			want: [][]string{{"--bind-address=127.0.0.1", "--advertise-address=192.168.77.5", "--endpoint-reconciler-type=lease"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.RealNodes, o.APIServers = tt.realNodes, tt.apiservers
			if tt.nodeIP != "" {
				o.RealNodeIP = tt.nodeIP
			}
			if errs := o.Validate(); len(errs) > 0 {
				t.Fatalf("invalid options: %v", errs)
			}
			c := &Cluster{Options: o, Endpoints: []string{"http://127.0.0.1:2379"}}
			for i, want := range tt.want {
				if got := o.apiserverServingArgs(i); !reflect.DeepEqual(got, want) {
					t.Errorf("apiserver %d: %q, want %q", i, got, want)
				}
				// And in the full command line, before the flags a user
				// passes through, which win.
				args := c.apiserverArgs(i, 6443+i)
				for _, w := range want {
					if !slices.Contains(args, w) {
						t.Errorf("apiserver %d's arguments %q lack %s", i, args, w)
					}
				}
			}
		})
	}
}

// TestPassedThroughReconcilerWins: a user's --endpoint-reconciler-type or
// --advertise-address comes after local-up's, so kube-apiserver takes it.
func TestPassedThroughReconcilerWins(t *testing.T) {
	o := NewOptions()
	o.RealNodes = 1
	o.PassThrough = []string{"--endpoint-reconciler-type=master-count"}
	args := (&Cluster{Options: o}).apiserverArgs(0, 6443)
	if mine, theirs := slices.Index(args, "--endpoint-reconciler-type=lease"), slices.Index(args, "--endpoint-reconciler-type=master-count"); mine < 0 || theirs < mine {
		t.Errorf("arguments %q: the passed-through reconciler must come last", args)
	}
}

func TestAPIServerHosts(t *testing.T) {
	tests := []struct {
		name      string
		realNodes int
		nodeIP    string
		extra     []string // beyond DefaultHosts
	}{
		{name: "hollow only: loopback and the Service's names"},
		{name: "real node: and the node IP", realNodes: 1, nodeIP: "10.200.0.1", extra: []string{"10.200.0.1"}},
		{name: "another node IP", realNodes: 1, nodeIP: "192.168.77.5", extra: []string{"192.168.77.5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.RealNodes = tt.realNodes
			if tt.nodeIP != "" {
				o.RealNodeIP = tt.nodeIP
			}
			if got, want := o.apiserverHosts(), append(DefaultHosts(), tt.extra...); !reflect.DeepEqual(got, want) {
				t.Errorf("apiserverHosts() = %q, want %q", got, want)
			}
		})
	}
}

func TestKubernetesServiceIP(t *testing.T) {
	tests := []struct {
		cidr, want string // want "" means an error
	}{
		{"10.0.0.0/24", "10.0.0.1"},
		{"10.96.0.0/12", "10.96.0.1"},
		{"10.96.5.7/12", "10.96.0.1"},
		{"fd00:10:96::/108", "fd00:10:96::1"},
		{"10.0.0.0/32", ""},
		{"10.0.0.0", ""},
	}
	for _, tt := range tests {
		got, err := kubernetesServiceIP(tt.cidr)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("kubernetesServiceIP(%q) = %s, want an error", tt.cidr, got)
		case tt.want != "" && (err != nil || got.String() != tt.want):
			t.Errorf("kubernetesServiceIP(%q) = %v, %v; want %s", tt.cidr, got, err, tt.want)
		}
	}
}

// TestDefaultHostsNameTheKubernetesService: the serving certificate is
// valid for the ClusterIP the apiserver gives the kubernetes Service in
// local-up's service range, and for its in-cluster names.
func TestDefaultHostsNameTheKubernetesService(t *testing.T) {
	ip, err := kubernetesServiceIP(serviceClusterIPRange)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{ip.String(), "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if !slices.Contains(DefaultHosts(), h) {
			t.Errorf("DefaultHosts() = %q lacks %s", DefaultHosts(), h)
		}
	}
}

// TestServingCertFollowsHosts: Ensure keeps the apiservers' serving
// certificate while it covers the hosts asked for, issues it again (same
// CA, same admin credential) when a host is missing, and when the CA
// changed.
func TestServingCertFollowsHosts(t *testing.T) {
	withNode := append(DefaultHosts(), "10.200.0.1")
	steps := []struct {
		name    string
		hosts   []string
		newCA   bool
		reissue bool
	}{
		{name: "first run", hosts: DefaultHosts(), reissue: true},
		{name: "same hosts: kept", hosts: DefaultHosts()},
		{name: "real node: the node IP is added", hosts: withNode, reissue: true},
		{name: "real node again: kept", hosts: withNode},
		{name: "hollow only: a certificate for more hosts is kept", hosts: DefaultHosts()},
		{name: "a new CA: issued again", hosts: DefaultHosts(), newCA: true, reissue: true},
	}
	p := PKI{Dir: t.TempDir()}
	var before, adminBefore []byte
	for _, s := range steps {
		if s.newCA {
			for _, f := range []string{p.CACert(), p.CAKey(), p.AdminCert(), p.AdminKey()} {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			adminBefore = nil
		}
		if err := p.Ensure(s.hosts); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		after, err := os.ReadFile(p.ServingCert())
		if err != nil {
			t.Fatal(err)
		}
		if reissued := string(after) != string(before); reissued != s.reissue {
			t.Errorf("%s: serving certificate issued again = %v, want %v", s.name, reissued, s.reissue)
		}
		admin, _ := os.ReadFile(p.AdminCert())
		if adminBefore != nil && string(admin) != string(adminBefore) {
			t.Errorf("%s: the admin certificate changed; earlier kubeconfigs would stop working", s.name)
		}
		before, adminBefore = after, admin

		pool := x509.NewCertPool()
		pool.AddCert(parseCert(t, p.CACert()))
		serving := parseCert(t, p.ServingCert())
		for _, h := range s.hosts {
			if _, err := serving.Verify(x509.VerifyOptions{Roots: pool, DNSName: h}); err != nil {
				t.Errorf("%s: serving certificate does not verify for %s: %v", s.name, h, err)
			}
		}
		if err := serving.VerifyHostname("10.200.0.2"); err == nil || !strings.Contains(err.Error(), "10.200.0.2") {
			t.Errorf("%s: serving certificate valid for 10.200.0.2, which no step asked for", s.name)
		}
	}
}

func TestSliceEndpoints(t *testing.T) {
	slice := func(port int32, name string, addrs ...string) discoveryv1.EndpointSlice {
		s := discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: ptr.To(name), Port: ptr.To(port)}}}
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}})
		}
		return s
	}
	tests := []struct {
		name  string
		items []discoveryv1.EndpointSlice
		want  []string
	}{
		{name: "none"},
		{name: "no endpoints yet", items: []discoveryv1.EndpointSlice{slice(6443, "https")}},
		{name: "the apiserver", items: []discoveryv1.EndpointSlice{slice(6443, "https", "10.200.0.1")}, want: []string{"10.200.0.1:6443"}},
		{name: "sorted", items: []discoveryv1.EndpointSlice{slice(6443, "https", "10.200.0.2", "10.200.0.1")}, want: []string{"10.200.0.1:6443", "10.200.0.2:6443"}},
		{name: "other ports do not count", items: []discoveryv1.EndpointSlice{slice(80, "http", "10.200.0.1")}},
	}
	for _, tt := range tests {
		if got := sliceEndpoints(tt.items); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: sliceEndpoints = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestEndpointVerdict(t *testing.T) {
	const ip, want = "10.200.0.1", "10.200.0.1:6443"
	tests := []struct {
		name string
		got  []string
		want endpointState
	}{
		{name: "not written yet", want: endpointWaiting},
		{name: "the advertised apiserver", got: []string{want}, want: endpointOK},
		{name: "a crashed run's port", got: []string{"10.200.0.1:22467"}, want: endpointStalePort},
		{name: "another address: the reconciler replaces it", got: []string{"10.9.9.9:6443"}, want: endpointWaiting},
		{name: "ours and another", got: []string{"10.200.0.1:6443", "10.9.9.9:6443"}, want: endpointWaiting},
	}
	for _, tt := range tests {
		if got := endpointVerdict(tt.got, ip, want); got != tt.want {
			t.Errorf("%s: endpointVerdict(%q) = %d, want %d", tt.name, tt.got, got, tt.want)
		}
	}
}
