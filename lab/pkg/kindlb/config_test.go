package kindlb

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// kindLDS and kindCDS have the shape kind v0.33's templates render for
// two control planes (pkg/cluster/internal/loadbalancer in its module),
// with the fields this package reads and some it ignores.
const kindLDS = `
resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: listener_apiserver
  address:
    socket_address:
      address: "0.0.0.0"
      port_value: 6443
  filter_chains:
  - filters:
    - name: envoy.filters.network.tcp_proxy
`

const kindCDS = `
resources:
- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: kube_apiservers
  connect_timeout: 0.25s
  type: STRICT_DNS
  lb_policy: ROUND_ROBIN
  health_checks:
  - timeout: 3s
    interval: 2s
    unhealthy_threshold: 2
    healthy_threshold: 1
    http_health_check:
      path: /healthz
  load_assignment:
    cluster_name: kube_apiservers
    endpoints:
    - lb_endpoints:
      - endpoint:
          address:
            socket_address:
              address: ha-control-plane2
              port_value: 6443
      - endpoint:
          address:
            socket_address:
              address: ha-control-plane
              port_value: 6443
`

func TestParse(t *testing.T) {
	kindWant := Config{
		Listen: "0.0.0.0", Port: 6443, ConnectTimeout: 250 * time.Millisecond,
		Servers: []Server{{"ha-control-plane", 6443}, {"ha-control-plane2", 6443}},
		Check:   Check{Path: "/healthz", Interval: 2 * time.Second, Timeout: 3 * time.Second, Fall: 2, Rise: 1},
	}
	cases := []struct {
		name     string
		lds, cds string
		want     Config
		wantErr  string
	}{
		{name: "kind before the control planes exist", lds: "resources: []", cds: "resources: []", want: Config{ConnectTimeout: time.Second}},
		{name: "missing files are empty", want: Config{ConnectTimeout: time.Second}},
		{name: "kind's two control planes", lds: kindLDS, cds: kindCDS, want: kindWant},
		{name: "IPv6 listener", lds: strings.Replace(kindLDS, `"0.0.0.0"`, `"::"`, 1), cds: kindCDS,
			want: func() Config { c := kindWant; c.Listen = "::"; return c }()},
		{name: "no health check", lds: kindLDS, cds: strings.Replace(kindCDS, "    http_health_check:\n      path: /healthz\n", "", 1),
			want: func() Config { c := kindWant; c.Check = Check{}; return c }()},
		{name: "not YAML", lds: "resources: [", cds: "", wantErr: "listeners"},
		{name: "listener without a port", lds: strings.Replace(kindLDS, "port_value: 6443", "port_value: 0", 1), wantErr: "no port"},
		{name: "two listeners", lds: "resources: [{address: {socket_address: {port_value: 1}}}, {address: {socket_address: {port_value: 2}}}]", wantErr: "2 listeners"},
		{name: "two clusters", lds: kindLDS, cds: "resources: [{}, {}]", wantErr: "2 clusters"},
		{name: "endpoint without an address", lds: kindLDS, cds: strings.Replace(kindCDS, "address: ha-control-plane\n", "address: \"\"\n", 1), wantErr: "endpoint"},
		{name: "bad duration", lds: kindLDS, cds: strings.Replace(kindCDS, "0.25s", "250ms", 1), wantErr: "250ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.lds), []byte(tc.cds))
			if tc.wantErr != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrConfig with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	c, err := Parse([]byte(kindLDS), []byte(kindCDS))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		c         Config
		want, not []string
	}{
		{name: "kind's two control planes", c: c, want: []string{
			"timeout connect 250ms",
			"bind 127.0.0.1:10000",
			"bind 0.0.0.0:6443\n",
			"balance roundrobin",
			"option httpchk GET /healthz",
			"timeout check 3000ms",
			"server ha-control-plane ha-control-plane:6443 check check-ssl verify none inter 2000ms fall 2 rise 1 resolvers docker init-addr libc,none\n",
			"server ha-control-plane2 ha-control-plane2:6443 check",
		}},
		{name: "empty: the health proxy only", c: Config{ConnectTimeout: time.Second}, want: []string{"listen health"}, not: []string{"frontend", "backend"}},
		{name: "IPv6 listener and server", c: Config{Listen: "::", Port: 6443, ConnectTimeout: time.Second, Servers: []Server{{"fc00::2", 6443}}},
			want: []string{"bind :::6443 v4v6", "server server0 [fc00::2]:6443 resolvers docker"}, not: []string{"httpchk"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkContains(t, Render(tc.c), tc.want, tc.not)
		})
	}
}

func TestBootstrap(t *testing.T) {
	const kindBootstrap = `
node:
  cluster: ha
  id: ha-external-load-balancer
dynamic_resources:
  cds_config:
    resource_api_version: V3
    path_config_source:
      path: /home/envoy/cds.yaml
  lds_config:
    resource_api_version: V3
    path_config_source:
      path: /home/envoy/lds.yaml
`
	lds, cds, err := Bootstrap([]byte(kindBootstrap))
	if err != nil || lds != "/home/envoy/lds.yaml" || cds != "/home/envoy/cds.yaml" {
		t.Fatalf("Bootstrap = %q, %q, %v", lds, cds, err)
	}
	if _, _, err := Bootstrap([]byte("node: {}")); !errors.Is(err, ErrConfig) {
		t.Fatalf("a bootstrap without files: %v, want ErrConfig", err)
	}
}

// checkContains reports each of want missing from got and each of not in
// it.
func checkContains(t *testing.T, got string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
	for _, n := range not {
		if strings.Contains(got, n) {
			t.Errorf("unexpected %q in\n%s", n, got)
		}
	}
}
