package kindconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// Paths inside the node image.
const (
	NodeDir        = "/kind/freshcache"
	NodeImagesDir  = NodeDir + "/images"
	NodePatchesDir = NodeDir + "/patches"
	ImportUnit     = "freshcache-images.service"
)

// Options describe one generated cluster.
type Options struct {
	// ClusterName is the kind cluster name (kind's default is "kind").
	ClusterName string
	// ControlPlanes is the number of control-plane nodes: 1, or 3 for HA
	// (stacked etcd, one member per control-plane node, behind kind's
	// haproxy load balancer).
	ControlPlanes int
	// Workers is the number of worker nodes.
	Workers int
	// KubernetesVersion, e.g. v1.37.2: the tag of both base images.
	KubernetesVersion string
	// APIServerBase is the upstream image our binary is layered on.
	APIServerBase string
	// NodeBase is the kind node image our node image is built FROM.
	NodeBase string
	// APIServerImage is the tag of the image we build (never :latest, which
	// would make the kubelet's default pull policy Always).
	APIServerImage string
	// NodeImage is the tag of the node image we build.
	NodeImage string
	// FeatureGates go to kube-apiserver only, e.g.
	// {"FreshResourceVersionZero": true}.
	FeatureGates map[string]bool
	// APIServerArgs are extra kube-apiserver flags (name without "--" ->
	// value), e.g. {"consistent-read-timeout-action": "reject"}.
	APIServerArgs map[string]string
	// DisableDefaultCNI turns kind's kindnetd off
	// (networking.disableDefaultCNI): the node images hack/kind-images.sh
	// builds have no kindnetd image (no Go module of it is served) and
	// bring their own bridge CNI configuration instead.
	DisableDefaultCNI bool
}

// Defaults returns the options hack/kind-up.sh starts from.
func Defaults() Options {
	v := "v1.37.2"
	return Options{
		ClusterName:       "freshcache",
		ControlPlanes:     1,
		Workers:           1,
		KubernetesVersion: v,
		APIServerBase:     "registry.k8s.io/kube-apiserver:" + v,
		NodeBase:          "kindest/node:" + v,
		APIServerImage:    "freshcache.local/kube-apiserver:" + v + "-freshcache",
		NodeImage:         "freshcache.local/kind-node:" + v + "-freshcache",
		FeatureGates:      map[string]bool{"FreshResourceVersionZero": true},
	}
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	flagRE = regexp.MustCompile(`^[a-z0-9][-a-z0-9]*$`)
)

// Validate reports the first problem with o.
func (o Options) Validate() error {
	switch {
	case !nameRE.MatchString(o.ClusterName):
		return fmt.Errorf("cluster name %q: want lower-case letters, digits and '-'", o.ClusterName)
	case o.ControlPlanes < 1:
		return fmt.Errorf("control planes: %d, want at least 1", o.ControlPlanes)
	case o.ControlPlanes%2 == 0:
		return fmt.Errorf("control planes: %d, want an odd number (stacked etcd needs a majority)", o.ControlPlanes)
	case o.Workers < 0:
		return fmt.Errorf("workers: %d, want 0 or more", o.Workers)
	case o.APIServerBase == "" || o.NodeBase == "" || o.APIServerImage == "" || o.NodeImage == "":
		return fmt.Errorf("every image must be set")
	case strings.HasSuffix(o.APIServerImage, ":latest") || !strings.Contains(lastSegment(o.APIServerImage), ":"):
		return fmt.Errorf("kube-apiserver image %q: give an explicit tag other than latest (the kubelet would try to pull it)", o.APIServerImage)
	}
	for name := range o.FeatureGates {
		if !flagRE.MatchString(strings.ToLower(name)) {
			return fmt.Errorf("feature gate %q: bad name", name)
		}
	}
	for name, v := range o.APIServerArgs {
		if !flagRE.MatchString(name) {
			return fmt.Errorf("kube-apiserver flag %q: give the name without dashes", name)
		}
		if name == "feature-gates" {
			return fmt.Errorf("kube-apiserver flag feature-gates: use FeatureGates")
		}
		if strings.ContainsAny(v, "\"\n") {
			return fmt.Errorf("kube-apiserver flag %q: value must not contain quotes or newlines", name)
		}
	}
	return nil
}

func lastSegment(image string) string {
	return image[strings.LastIndex(image, "/")+1:]
}

// FeatureGatesString renders the gates as --feature-gates wants them, sorted.
func (o Options) FeatureGatesString() string {
	names := make([]string, 0, len(o.FeatureGates))
	for n := range o.FeatureGates {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%t", n, o.FeatureGates[n])
	}
	return strings.Join(parts, ",")
}

// Generated file names, relative to the output directory.
const (
	KindConfigFile   = "kind-config.yaml"
	APIServerContext = "apiserver" // docker build context of the kube-apiserver image
	NodeContext      = "node"      // docker build context of the node image
	APIServerBinary  = "apiserver/kube-apiserver"
	APIServerTarball = "node/images/kube-apiserver.tar"
	KubeadmPatch     = "node/patches/kube-apiserver+strategic.yaml"
)

// Files returns every generated file: path relative to the output
// directory -> content. Executable files end in .sh.
func Files(o Options) (map[string]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	files := map[string]string{}
	for name, tmpl := range map[string]*template.Template{
		KindConfigFile:                             kindConfigTmpl,
		APIServerContext + "/Dockerfile":           apiserverDockerfileTmpl,
		NodeContext + "/Dockerfile":                nodeDockerfileTmpl,
		NodeContext + "/" + ImportUnit:             importUnitTmpl,
		NodeContext + "/10-freshcache-images.conf": kubeletDropInTmpl,
		NodeContext + "/import-images.sh":          importScriptTmpl,
		KubeadmPatch:                               kubeadmPatchTmpl,
	} {
		var b bytes.Buffer
		if err := tmpl.Execute(&b, o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files[name] = b.String()
	}
	return files, nil
}

// Write writes Files(o) under dir, creating directories, and returns the
// paths written, sorted.
func Write(dir string, o Options) ([]string, error) {
	files, err := Files(o)
	if err != nil {
		return nil, err
	}
	var written []string
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return nil, err
		}
		written = append(written, p)
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(filepath.FromSlash(APIServerTarball))), 0o755); err != nil {
		return nil, err
	}
	sort.Strings(written)
	return written, nil
}

var funcs = template.FuncMap{
	"seq": func(n int) []int { s := make([]int, n); return s },
	"sortedArgs": func(m map[string]string) [][2]string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][2]string, len(keys))
		for i, k := range keys {
			out[i] = [2]string{k, m[k]}
		}
		return out
	},
}

func mustTmpl(name, text string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).Parse(text))
}

var kindConfigTmpl = mustTmpl("kind-config", `# Generated by hack/kind-up.sh (lab/pkg/kindconfig). kind v0.33+.
# Every node runs {{.NodeImage}}: {{.NodeBase}} plus the
# kube-apiserver image {{.APIServerImage}}, imported into containerd at
# boot before the kubelet starts (see docs/kind.md, "How the image gets in").
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
name: {{.ClusterName}}
nodes:
{{- range seq .ControlPlanes}}
- role: control-plane
  image: {{$.NodeImage}}
{{- end}}
{{- range seq .Workers}}
- role: worker
  image: {{$.NodeImage}}
{{- end}}
{{- if .DisableDefaultCNI}}
# No kindnetd: the node image writes a bridge CNI config from each node's
# podCIDR and routes the other nodes' podCIDRs (docs/kind.md).
networking:
  disableDefaultCNI: true
{{- end}}
kubeadmConfigPatches:
# Kubernetes 1.35+ kubelets refuse to start on a cgroup v1 host unless
# failCgroupV1 is false; kind v0.33 only warns about cgroup v1 and does not
# set it. Without effect on cgroup v2.
- |
  apiVersion: kubelet.config.k8s.io/v1beta1
  kind: KubeletConfiguration
  failCgroupV1: false
# kube-apiserver only: the stock controller-manager, scheduler and kubelet
# do not know freshcache's gates (kind's featureGates would reach them all).
- |
  apiVersion: kubeadm.k8s.io/v1beta4
  kind: ClusterConfiguration
  apiServer:
    extraArgs:
    - name: feature-gates
      value: "{{.FeatureGatesString}}"
{{- range sortedArgs .APIServerArgs}}
    - name: {{index . 0}}
      value: "{{index . 1}}"
{{- end}}
# kubeadm's patches (not kind's): {{.KubeadmPatchFile}} in the node image
# sets the kube-apiserver static pod's image to {{.APIServerImage}}.
- |
  apiVersion: kubeadm.k8s.io/v1beta4
  kind: InitConfiguration
  patches:
    directory: `+NodePatchesDir+`
- |
  apiVersion: kubeadm.k8s.io/v1beta4
  kind: JoinConfiguration
  patches:
    directory: `+NodePatchesDir+`
`)

// KubeadmPatchFile is the patch's path inside the node image.
func (o Options) KubeadmPatchFile() string {
	return NodePatchesDir + "/" + filepath.Base(KubeadmPatch)
}

var apiserverDockerfileTmpl = mustTmpl("apiserver-dockerfile", `# Generated by hack/kind-up.sh (lab/pkg/kindconfig).
# Upstream's kube-apiserver image, with freshcache's kube-apiserver binary in
# place of upstream's. The binary must be linux/amd64 and static
# (CGO_ENABLED=0): the base image has no libc.
FROM --platform=linux/amd64 {{.APIServerBase}}
COPY kube-apiserver /usr/local/bin/kube-apiserver
`)

var nodeDockerfileTmpl = mustTmpl("node-dockerfile", `# Generated by hack/kind-up.sh (lab/pkg/kindconfig).
# kind node image that carries {{.APIServerImage}} (saved with
# docker save into images/kube-apiserver.tar) and imports it into containerd
# at boot, before the kubelet starts, so that kubeadm init inside
# 'kind create cluster' finds it. Nothing runs containerd at build time.
FROM --platform=linux/amd64 {{.NodeBase}}
COPY images/ `+NodeImagesDir+`/
COPY patches/ `+NodePatchesDir+`/
COPY import-images.sh `+NodeDir+`/import-images.sh
COPY `+ImportUnit+` /etc/systemd/system/`+ImportUnit+`
COPY 10-freshcache-images.conf /etc/systemd/system/kubelet.service.d/05-freshcache-images.conf
RUN chmod 0755 `+NodeDir+`/import-images.sh \
 && mkdir -p /etc/systemd/system/multi-user.target.wants \
 && ln -sf ../`+ImportUnit+` /etc/systemd/system/multi-user.target.wants/`+ImportUnit+`
`)

var importUnitTmpl = mustTmpl("unit", `# Generated by hack/kind-up.sh (lab/pkg/kindconfig).
[Unit]
Description=Import freshcache's kube-apiserver image into containerd (k8s.io namespace)
After=containerd.service
Requires=containerd.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=`+NodeDir+`/import-images.sh

[Install]
WantedBy=multi-user.target
`)

var kubeletDropInTmpl = mustTmpl("dropin", `# Generated by hack/kind-up.sh (lab/pkg/kindconfig).
# Whenever the kubelet starts (at boot, or when kubeadm restarts it), the
# image import has finished first.
[Unit]
Wants=`+ImportUnit+`
After=`+ImportUnit+`
`)

var importScriptTmpl = mustTmpl("import", `#!/bin/sh
# Generated by hack/kind-up.sh (lab/pkg/kindconfig).
# Import every image tarball in `+NodeImagesDir+` into containerd's k8s.io
# namespace, as 'kind load docker-image' does.
set -eu
i=0
until ctr version >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -ge 60 ]; then echo "containerd did not answer within 60s" >&2; exit 1; fi
  sleep 1
done
# containerd config v2: plugins."io.containerd.grpc.v1.cri".containerd.snapshotter;
# v3: plugins."io.containerd.cri.v1.images".snapshotter. The first non-empty one.
snapshotter=$(containerd config dump 2>/dev/null \
  | sed -n "s/^[[:space:]]*snapshotter[[:space:]]*=[[:space:]]*[\"']\([^\"']\{1,\}\)[\"'].*/\1/p" | head -n 1)
snapshotter=${snapshotter:-overlayfs}
for tar in `+NodeImagesDir+`/*.tar; do
  [ -e "$tar" ] || { echo "no image tarball in `+NodeImagesDir+`" >&2; exit 1; }
  echo "importing $tar (snapshotter $snapshotter)"
  ctr --namespace=k8s.io images import --all-platforms --digests --snapshotter="$snapshotter" "$tar"
done
ctr --namespace=k8s.io images ls -q | grep -F '{{.APIServerImage}}'
`)

var kubeadmPatchTmpl = mustTmpl("patch", `# Generated by hack/kind-up.sh (lab/pkg/kindconfig).
# kubeadm patch (strategic merge) for the kube-apiserver static pod, found
# through InitConfiguration/JoinConfiguration patches.directory. The image
# was imported into containerd at boot; Never makes a missing image an error
# (ErrImageNeverPull) instead of a pull from a registry.
spec:
  containers:
  - name: kube-apiserver
    image: {{.APIServerImage}}
    imagePullPolicy: Never
`)
