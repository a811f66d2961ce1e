package kindupgrade

import (
	"fmt"
	"strings"
)

// The caches an apiserver can run.
const (
	Upstream   = "upstream"
	Freshcache = "freshcache"
)

// Step is one change of the roll: control plane Target (0-based) restarts
// with cache To.
type Step struct {
	Name   string
	Target int
	To     string
	// Phase groups steps for the report: "restart" (the control),
	// "upgrade" or "rollback".
	Phase string
}

// Plan is the roll over n control planes: each restarted on upstream's
// cacher (the control), then each moved to freshcache, then each moved
// back, one at a time in node order.
func Plan(n int) []Step {
	var steps []Step
	for _, p := range []struct{ phase, to, verb string }{
		{"restart", Upstream, "restarted on upstream's cacher"},
		{"upgrade", Freshcache, "moved to freshcache"},
		{"rollback", Upstream, "moved back to upstream's cacher"},
	} {
		for i := range n {
			steps = append(steps, Step{Name: fmt.Sprintf("apiserver %d %s", i+1, p.verb), Target: i, To: p.to, Phase: p.phase})
		}
	}
	return steps
}

// Caches are what each control plane runs after steps[:k] (Initial: every
// one on upstream's cacher).
func Caches(n int, steps []Step, k int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Upstream
	}
	for _, s := range steps[:k] {
		out[s.Target] = s.To
	}
	return out
}

// Manifest is the kube-apiserver static pod manifest kubeadm writes on a
// control plane.
const Manifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"

// generationModule names the --vmodule entry that carries the step's
// generation: no source file has that name, so it changes nothing but
// the pod, which the kubelet then restarts.
const generationModule = "freshcacheupgrade"

// EditCommand is the command, run inside a control plane's container,
// that rewrites the manifest at path (Manifest) so that its watch cache
// flag says cache and its generation flag gen, then checks that both
// lines are there (kind-up writes the watch cache flag; a manifest
// without one fails). The kubelet sees the file change and restarts the
// static pod.
func EditCommand(path, cache string, gen int) ([]string, error) {
	if cache != Upstream && cache != Freshcache {
		return nil, fmt.Errorf("kindupgrade: unknown cache %q", cache)
	}
	cacheLine := "- --watch-cache-implementation=" + cache
	genLine := fmt.Sprintf("- --vmodule=%s=%d", generationModule, gen)
	script := strings.Join([]string{
		"set -e",
		fmt.Sprintf("grep -q -- '^ *- --watch-cache-implementation=' %s", path),
		fmt.Sprintf("sed -i -E -e '/^ *- --vmodule=%s=/d' -e 's#^( *)- --watch-cache-implementation=.*#\\1%s\\n\\1%s#' %s", generationModule, cacheLine, genLine, path),
		fmt.Sprintf("grep -q -- '%s$' %s", cacheLine, path),
		fmt.Sprintf("grep -q -- '%s$' %s", genLine, path),
	}, "\n")
	return []string{"sh", "-c", script}, nil
}
