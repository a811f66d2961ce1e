// Package kindconfig generates everything hack/kind-up.sh needs to run
// freshcache's kube-apiserver in a kind cluster: the kube-apiserver image's
// Dockerfile, a kind node image that carries that image, the kubeadm patch
// that points the control plane's static pod at it, and the kind config.
//
// # Why a custom node image
//
// kind runs `kubeadm init` inside `kind create cluster`. The kubelet then
// starts the kube-apiserver static pod at once, so the image must already be
// in the node's containerd: `kind load docker-image` can only run after the
// cluster exists, which is too late, and the stock image would refuse
// --feature-gates=FreshResourceVersionZero=true and never become ready.
//
// So the node image (FROM kindest/node) carries the kube-apiserver image as a
// tarball, plus a oneshot systemd unit that imports it into containerd's
// k8s.io namespace at boot, ordered before kubelet.service (a kubelet drop-in
// Wants= and After= it). The tarball is imported exactly as `kind load
// docker-image` would (ctr images import --all-platforms --digests
// --snapshotter=<containerd's>). kubeadm's own patches mechanism
// (InitConfiguration/JoinConfiguration `patches.directory`, set through the
// kind config's kubeadmConfigPatches) replaces the static pod's image and
// sets imagePullPolicy: Never, so a failed import fails loudly
// (ErrImageNeverPull) instead of falling back to a registry. The feature gate
// goes to kube-apiserver alone, through ClusterConfiguration
// apiServer.extraArgs; kind's own `featureGates` field would also reach the
// stock controller-manager, scheduler and kubelet, which do not know it.
//
// # Offline node images and cgroup v1
//
// The node image may also be the one hack/kind-images.sh builds with no
// registry (FROM freshcache.local/kind-node-base, the apiserver image FROM
// a scratch base). That image has no kindnetd, so Options.DisableDefaultCNI
// sets networking.disableDefaultCNI and the node image's own bridge CNI
// takes over. Every config carries a KubeletConfiguration patch with
// failCgroupV1: false: 1.35+ kubelets refuse to start on a cgroup v1 host
// otherwise, kind v0.33 does not set it, and it changes nothing on cgroup
// v2.
//
// # Who calls it
//
// lab/cmd/kind-config, which hack/kind-up.sh runs to write these files before it
// builds the images and creates the cluster (docs/kind.md). Its tests check
// the generated files' content; nothing here talks to Docker or kind.
package kindconfig
