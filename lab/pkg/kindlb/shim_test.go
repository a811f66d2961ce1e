package kindlb

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDockerShim runs hack/kind-docker-shim.sh, the docker that
// hack/kind-up.sh gives kind, over a docker that prints its arguments:
// offline it swaps kind's envoy image for the haproxy one in `run` only,
// and it replaces --privileged only when asked to.
func TestDockerShim(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	shim := filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", "kind-docker-shim.sh")
	dir := t.TempDir()
	fake := filepath.Join(dir, "docker")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const envoy, haproxy = "docker.io/envoyproxy/envoy:v1.36.2", "freshcache.local/kind-lb:haproxy"
	swap := []string{"KIND_SHIM_IMAGE_FROM=" + envoy, "KIND_SHIM_IMAGE_TO=" + haproxy}
	cases := []struct {
		name      string
		env       []string
		args      []string
		want, not []string
	}{
		{name: "run: the load balancer swapped", env: swap,
			args: []string{"run", "--detach", "--name", "ha-external-load-balancer", envoy, "bash", "-c", "envoy -c /home/envoy/envoy.yaml"},
			want: []string{"run --detach --name ha-external-load-balancer " + haproxy + " bash -c envoy -c /home/envoy/envoy.yaml"}},
		{name: "run: a node image untouched", env: swap, args: []string{"run", "--privileged", "kindest/node:v1.37.2"},
			want: []string{"run --privileged kindest/node:v1.37.2"}},
		{name: "exec: untouched", env: swap, args: []string{"exec", "ha-external-load-balancer", envoy},
			want: []string{"exec ha-external-load-balancer " + envoy}},
		{name: "inspect: untouched", env: swap, args: []string{"inspect", "--type=image", envoy},
			want: []string{"inspect --type=image " + envoy}},
		{name: "no swap asked", args: []string{"run", envoy}, want: []string{"run " + envoy}},
		{name: "unprivileged: --privileged replaced", env: []string{"KIND_SHIM_UNPRIVILEGED=1"}, args: []string{"run", "--privileged", "node"},
			want: []string{"--cap-add=ALL", " node"}, not: []string{"--privileged"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("bash", append([]string{shim}, tc.args...)...)
			cmd.Env = append(append(os.Environ(), "KIND_REAL_DOCKER="+fake), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			checkContains(t, strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", " "), tc.want, tc.not)
		})
	}
}
