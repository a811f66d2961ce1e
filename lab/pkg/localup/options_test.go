package localup

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/lab/internal/errtest"
)

// TestValidateNodeFlags covers the flags of the controllers and the hollow
// nodes: every bad value is refused with an error naming its flag.
func TestValidateNodeFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // "" for valid
	}{
		{"defaults", nil, ""},
		{"bare apiserver", []string{"--nodes=0", "--controllers=false"}, ""},
		{"nodes without controllers", []string{"--nodes=3", "--controllers=false"}, ""},
		{"most nodes", []string{"--nodes=200"}, ""},
		{"negative nodes", []string{"--nodes=-1"}, "--nodes=-1: use 0 to 200"},
		{"absurd nodes", []string{"--nodes=100000"}, "--nodes=100000"},
		{"uppercase prefix", []string{"--node-name-prefix=Hollow-"}, "--node-name-prefix=\"Hollow-\""},
		{"prefix with underscore", []string{"--node-name-prefix=a_"}, "--node-name-prefix"},
		{"dotted prefix", []string{"--node-name-prefix=rack1.node-"}, ""},
		{"bad prefix ignored without nodes", []string{"--nodes=0", "--node-name-prefix=_"}, ""},
		{"kubelet port", []string{"--kubelet-port=20250", "--nodes=10"}, ""},
		{"kubelet port past the end", []string{"--kubelet-port=65530", "--nodes=10"}, "--kubelet-port=65530"},
		{"negative kubelet port", []string{"--kubelet-port=-5"}, "--kubelet-port=-5"},
		{"node apiserver of two", []string{"--apiservers=2", "--node-apiserver=2"}, ""},
		{"node apiserver beyond", []string{"--apiservers=2", "--node-apiserver=3"}, "--node-apiserver=3: use 1 to --apiservers=2"},
		{"negative node apiserver", []string{"--node-apiserver=-1"}, "--node-apiserver=-1"},
		{"override", []string{"--apiservers=2", "--node-apiserver-overrides=hollow-0=2,hollow-1=1"}, ""},
		{"override unknown node", []string{"--node-apiserver-overrides=hollow-2=1"}, `no node "hollow-2" among the 2 hollow node(s) (hollow-0 to hollow-1)`},
		{"override with no nodes", []string{"--nodes=0", "--node-apiserver-overrides=hollow-0=1"}, "(--nodes=0)"},
		{"override beyond", []string{"--node-apiserver-overrides=hollow-0=2"}, "hollow-0=2: use 1 to --apiservers=1"},
		{"override not a number", []string{"--node-apiserver-overrides=hollow-0=first"}, "hollow-0=first"},
		{"zero ready timeout", []string{"--ready-timeout=0s"}, "--ready-timeout=0s"},
		{"one real node", []string{"--real-nodes=1"}, ""},
		{"real node only", []string{"--real-nodes=1", "--nodes=0"}, ""},
		{"two real nodes", []string{"--real-nodes=2"}, "--real-nodes=2: use 0 (hollow nodes only) or 1"},
		{"negative real nodes", []string{"--real-nodes=-1"}, "--real-nodes=-1"},
		{"hollow prefix of the real nodes", []string{"--real-nodes=1", "--node-name-prefix=real-"}, "--node-name-prefix=real- is the real nodes' prefix"},
		{"real prefix without real nodes", []string{"--node-name-prefix=real-"}, ""},
		{"real node IP", []string{"--real-nodes=1", "--real-node-ip=192.168.77.1"}, ""},
		{"loopback real node IP", []string{"--real-nodes=1", "--real-node-ip=127.0.0.2"}, "--real-node-ip=\"127.0.0.2\": want an IPv4 address outside 127.0.0.0/8"},
		{"IPv6 real node IP", []string{"--real-nodes=1", "--real-node-ip=fd00::1"}, "--real-node-ip=\"fd00::1\""},
		{"bad real node IP ignored without real nodes", []string{"--real-node-ip=x"}, ""},
		{"DNS without kube-proxy", []string{"--real-nodes=1", "--real-node-kube-proxy=false"}, "--real-node-dns needs --real-node-kube-proxy"},
		{"neither DNS nor kube-proxy", []string{"--real-nodes=1", "--real-node-kube-proxy=false", "--real-node-dns=false"}, ""},
		{"DNS without controllers", []string{"--real-nodes=1", "--controllers=false"}, "--real-node-dns needs --controllers"},
		{"bare real node", []string{"--real-nodes=1", "--controllers=false", "--real-node-dns=false"}, ""},
		{"kwok nodes", []string{"--nodes=0", "--kwok-nodes=5000"}, ""},
		{"kwok beside hollow nodes", []string{"--kwok-nodes=10"}, ""},
		{"too many kwok nodes", []string{"--kwok-nodes=10001"}, "--kwok-nodes=10001: use 0 to 10000"},
		{"negative kwok nodes", []string{"--kwok-nodes=-2"}, "--kwok-nodes=-2"},
		{"kwok prefix the hollow one's", []string{"--kwok-nodes=2", "--kwok-node-name-prefix=hollow-"}, "overlap"},
		{"kwok prefix inside the hollow one's", []string{"--kwok-nodes=2", "--kwok-node-name-prefix=h"}, "overlap"},
		{"kwok prefix the real one's", []string{"--kwok-nodes=2", "--real-nodes=1", "--kwok-node-name-prefix=real-"}, "overlap"},
		{"short kwok status interval", []string{"--kwok-nodes=2", "--kwok-node-status-interval=10ms"}, "status interval"},
		{"controller qps", []string{"--controller-kube-api-qps=200"}, ""},
		{"negative controller qps", []string{"--controller-kube-api-qps=-1"}, "--controller-kube-api-qps=-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := parse(t, tc.args...)
			errtest.WantOne(t, fmt.Sprintf("Validate(%q)", tc.args), o.Validate(), tc.want)
		})
	}
}

func TestNodeAPIServerIndex(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []int // 0-based apiserver of each node
	}{
		{"one apiserver", []string{"--nodes=3"}, []int{0, 0, 0}},
		{"round-robin", []string{"--nodes=5", "--apiservers=2"}, []int{0, 1, 0, 1, 0}},
		{"all on the second", []string{"--nodes=3", "--apiservers=2", "--node-apiserver=2"}, []int{1, 1, 1}},
		{"override over round-robin", []string{"--nodes=3", "--apiservers=3", "--node-apiserver-overrides=hollow-0=3"}, []int{2, 1, 2}},
		{"override over a fixed one", []string{"--nodes=2", "--apiservers=2", "--node-apiserver=1", "--node-apiserver-overrides=hollow-1=2"}, []int{0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := parse(t, tc.args...)
			if errs := o.Validate(); len(errs) > 0 {
				t.Fatal(errs)
			}
			var got []int
			for i := 0; i < o.Nodes; i++ {
				got = append(got, o.NodeAPIServerIndex(i))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("apiservers of the nodes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRealNodeAPIServerIndex(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want int // 0-based apiserver of real-0
	}{
		{"default: the first", []string{"--real-nodes=1", "--apiservers=2"}, 0},
		{"round-robin is for hollow nodes", []string{"--real-nodes=1", "--nodes=2", "--apiservers=2", "--node-apiserver=0"}, 0},
		{"all nodes on the second", []string{"--real-nodes=1", "--apiservers=2", "--node-apiserver=2"}, 1},
		{"override by name", []string{"--real-nodes=1", "--nodes=1", "--apiservers=2", "--node-apiserver=1", "--node-apiserver-overrides=real-0=2"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := parse(t, tc.args...)
			if errs := o.Validate(); len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := o.RealNodeAPIServerIndex(0); got != tc.want {
				t.Fatalf("apiserver of real-0 = %d, want %d", got, tc.want)
			}
		})
	}
	for _, bad := range [][]string{
		{"--real-nodes=0", "--apiservers=2", "--node-apiserver-overrides=real-0=2"}, // no real node
		{"--real-nodes=1", "--apiservers=2", "--node-apiserver-overrides=real-0=3"}, // no third apiserver
		{"--real-nodes=1", "--apiservers=2", "--node-apiserver-overrides=real-1=1"}, // one real node
	} {
		if errs := parse(t, bad...).Validate(); len(errs) == 0 {
			t.Errorf("%v: valid, want an error", bad)
		}
	}
}

func TestRealNodeFeatureGatesFlag(t *testing.T) {
	o := parse(t, "--real-nodes=1", "--real-node-feature-gates=WatchListClient=false")
	if got, want := o.RealNodeFeatureGates, map[string]bool{"WatchListClient": false}; !reflect.DeepEqual(got, want) {
		t.Fatalf("RealNodeFeatureGates = %v, want %v", got, want)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	NewOptions().AddFlags(fs)
	if err := fs.Parse([]string{"--real-node-feature-gates=WatchListClient=maybe"}); err == nil {
		t.Fatal("a gate that is not a bool parsed")
	}
}

// TestResolveBinaries: a binary given by flag must exist, and only the
// binaries a run needs are looked for.
func TestResolveBinaries(t *testing.T) {
	dir := t.TempDir()
	fake := dir + "/kube-apiserver"
	writeExecutable(t, fake)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bare apiserver needs only kube-apiserver", []string{"--nodes=0", "--controllers=false"}, ""},
		{"missing kubemark", []string{"--controllers=false", "--kubemark=" + dir + "/nope"}, "--kubemark=" + dir + "/nope"},
		{"missing controller-manager", []string{"--nodes=0", "--kube-controller-manager=" + dir + "/nope"}, "--kube-controller-manager="},
		{"missing scheduler", []string{"--nodes=0", "--kube-scheduler=" + dir + "/nope"}, "--kube-scheduler="},
		{"missing kube-apiserver", []string{"--nodes=0", "--controllers=false", "--kube-apiserver=" + dir + "/nope"}, "--kube-apiserver="},
		{"missing kwok", []string{"--nodes=0", "--controllers=false", "--kwok-nodes=3", "--kwok=" + dir + "/nope"}, "--kwok=" + dir + "/nope"},
		{"kwok not needed without kwok nodes", []string{"--nodes=0", "--controllers=false", "--kwok=" + dir + "/nope"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--kube-apiserver=" + fake, "--kube-controller-manager=" + fake, "--kube-scheduler=" + fake, "--kubemark=" + fake}, tc.args...)
			_, err := parse(t, args...).resolveBinaries()
			errtest.Want(t, "resolveBinaries", err, tc.want)
		})
	}
}

// parse gives the options that local-up's command line args make.
func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("local-up", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return o
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestLeaderElect: the controllers elect a leader by default, as in a
// kubeadm control plane, and not with --leader-elect=false.
func TestLeaderElect(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--leader-elect=true"},
		{[]string{"--leader-elect=false"}, "--leader-elect=false"},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("local-up", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		c := &Cluster{Options: o}
		for _, spec := range []componentSpec{c.controllerManagerSpec("kcm", 1), c.schedulerSpec("sched", 2)} {
			if args := c.componentArgs(spec, "kubeconfig"); !slices.Contains(args, tc.want) {
				t.Errorf("%v: %s args %v lack %s", tc.args, spec.name, args, tc.want)
			}
		}
	}
}
