package realnode

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/freshcache/freshcache/lab/pkg/localup/realnode/imagetar"
)

func TestMountsUnder(t *testing.T) {
	mountinfo := `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 254:0 /work/d/kubelet/root /work/d/kubelet/root rw shared:1 - ext4 /dev/vda rw
31 30 0:50 / /work/d/kubelet/root/pods/u/volumes/kubernetes.io~projected/kube-api-access-x rw - tmpfs tmpfs rw
32 22 0:51 / /work/d/containerd/state/io.containerd.grpc.v1.cri/sandboxes/abc/shm rw - tmpfs shm rw
33 22 0:4 net:[4026532] /work/d/containerd/state/netns/cni-1 rw - nsfs nsfs rw
34 22 0:52 / /work/dd/other rw - tmpfs tmpfs rw
35 22 0:53 / /work/d\040with\040space/x rw - tmpfs tmpfs rw
36 22 0:54 / /run/netns/cni-9 rw - nsfs nsfs rw
`
	tests := []struct {
		name  string
		roots []string
		want  []string
	}{
		{"node dir, deepest first", []string{"/work/d"}, []string{
			"/work/d/kubelet/root/pods/u/volumes/kubernetes.io~projected/kube-api-access-x",
			"/work/d/containerd/state/io.containerd.grpc.v1.cri/sandboxes/abc/shm",
			"/work/d/containerd/state/netns/cni-1",
			"/work/d/kubelet/root",
		}},
		{"trailing slash, escaped space", []string{"/work/d with space/"}, []string{"/work/d with space/x"}},
		{"nothing under", []string{"/srv"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mountsUnder(strings.NewReader(mountinfo), tt.roots)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mountsUnder = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFindAddress(t *testing.T) {
	out := `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
1: lo    inet 10.200.0.1/32 scope global lo\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \       valid_lft forever preferred_lft forever
4: eth0    inet 172.16.0.2/24 brd 172.16.0.255 scope global eth0\       valid_lft forever preferred_lft forever
`
	tests := []struct {
		ip      string
		wantDev string
		wantOK  bool
	}{
		{"10.200.0.1", "lo", true},
		{"172.16.0.2", "eth0", true},
		{"::1", "lo", true},
		{"10.200.0.10", "", false},
		{"10.200.0", "", false},
	}
	for _, tt := range tests {
		dev, ok := findAddress(out, tt.ip)
		if dev != tt.wantDev || ok != tt.wantOK {
			t.Errorf("findAddress(%s) = %q, %v; want %q, %v", tt.ip, dev, ok, tt.wantDev, tt.wantOK)
		}
	}
}

func TestAppletLinks(t *testing.T) {
	got := appletLinks("usr/bin/[\nbin/sh\nbin/busybox\n/sbin/ifconfig\nbin/sh\n")
	want := []imagetar.File{
		{Path: "usr/bin/[", Mode: 0o777 | symlink, Link: "/bin/busybox"},
		{Path: "bin/[", Mode: 0o777 | symlink, Link: "/bin/busybox"},
		{Path: "bin/sh", Mode: 0o777 | symlink, Link: "/bin/busybox"},
		{Path: "sbin/ifconfig", Mode: 0o777 | symlink, Link: "/bin/busybox"},
		{Path: "bin/ifconfig", Mode: 0o777 | symlink, Link: "/bin/busybox"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("appletLinks = %+v\nwant %+v", got, want)
	}
}

const symlink = fs.ModeSymlink

func TestShellJoin(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"_output/bin/local-up", "--real-nodes=1"}, "_output/bin/local-up --real-nodes=1"},
		{[]string{"local-up", "--data-dir=/tmp/a b", "--x=it's"}, `local-up '--data-dir=/tmp/a b' '--x=it'\''s'`},
		{[]string{"local-up", ""}, "local-up ''"},
	}
	for _, tt := range tests {
		if got := shellJoin(tt.args); got != tt.want {
			t.Errorf("shellJoin(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}
