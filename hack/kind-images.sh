#!/usr/bin/env bash
# kind-images.sh: build, with no container registry, every image that
# hack/kind-up.sh needs for a kind cluster of Kubernetes v1.37.2.
#
# Usage: hack/kind-images.sh [--rebuild]
#
# Needs: Docker, mmdebstrap (Debian's package) and a Debian mirror, the Go
# module proxy, and the binaries of `make build-kind-bins` in _output/kindnode/bin.
# Every image is built here from Debian packages and Go modules: nothing is
# pulled. A second run reuses every image that exists (--rebuild: none).
#
#   freshcache.local/debian:bookworm           mmdebstrap --variant=minbase, docker import
#   freshcache.local/debian-iptables:bookworm  the same plus iptables and conntrack (kube-proxy)
#   freshcache.local/kind-node-rootfs:bookworm the node's Debian packages (systemd, runc, CNI plugins, ...)
#   freshcache.local/kind-node-base:v1.37.2    the kind node image: the rootfs + kind v0.33.0's
#       node files (images/base/files of the sigs.k8s.io/kind module, read from
#       the Go module cache now, never copied into the repository) +
#       containerd, crictl, kubeadm, kubelet, kubectl + the images below as
#       tarballs, imported into containerd at boot by freshcache-preload.service
#   freshcache.local/kube-apiserver-base:v1.37.2  scratch with PATH set; hack/kind-up.sh adds ours
#   the images kubeadm v1.37.2 starts, under the names it lists
#       (`kubeadm config images list`): pause, etcd, kube-controller-manager,
#       kube-scheduler, kube-proxy, CoreDNS; each FROM scratch with its static
#       binary, but kube-proxy FROM debian-iptables. kube-apiserver is not
#       among them: hack/kind-up.sh builds ours and patches the static pod.
#   freshcache.local/busybox:1.35.0   Debian's busybox-static on scratch, the workload
#   freshcache.local/kind-lb:haproxy  kind's load balancer for --ha: Debian's haproxy
#       run by lab/cmd/kind-lb, installed as `envoy` (kind v0.33 starts envoy's
#       image, which no registry here serves and nothing here builds; the
#       image is tested with lab/pkg/kindlb's TestImage once built)
#
# Environment: OUT (default _output/kind-images), DOCKER, KIND_BIN
# (default _output/kindnode/bin), DEBIAN_MIRROR, K8S_VERSION (v1.37.2),
# KIND_MODULE (sigs.k8s.io/kind@v0.33.0).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
DOCKER=${DOCKER:-docker}
OUT=${OUT:-_output/kind-images}
KIND_BIN=${KIND_BIN:-_output/kindnode/bin}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
K8S_VERSION=${K8S_VERSION:-v1.37.2}
KIND_MODULE=${KIND_MODULE:-sigs.k8s.io/kind@v0.33.0}

BASE_IMAGE=freshcache.local/debian:$SUITE
IPTABLES_IMAGE=freshcache.local/debian-iptables:$SUITE
ROOTFS_IMAGE=freshcache.local/kind-node-rootfs:$SUITE
NODE_BASE_IMAGE=freshcache.local/kind-node-base:$K8S_VERSION
APISERVER_BASE_IMAGE=freshcache.local/kube-apiserver-base:$K8S_VERSION
BUSYBOX_IMAGE=freshcache.local/busybox:1.35.0
LB_ROOTFS_IMAGE=freshcache.local/debian-haproxy:$SUITE
LB_IMAGE=freshcache.local/kind-lb:haproxy

# The node's packages: what kind's base image installs (systemd, conntrack,
# iptables, nftables, iproute2, ethtool, util-linux, mount, kmod,
# libseccomp2, pigz, e2fsprogs, bash, ca-certificates, curl, jq, procps),
# plus what kind builds from source and Debian packages: runc and the CNI
# plugins; socat for kubectl port-forward.
NODE_PACKAGES=systemd,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps,runc,containernetworking-plugins,socat,hostname

REBUILD=0
case "${1:-}" in
  --rebuild) REBUILD=1 ;;
  "") ;;
  -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "kind-images.sh: unknown argument $1" >&2; exit 2 ;;
esac

case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
mkdir -p "$OUT"

command -v mmdebstrap >/dev/null || { echo "kind-images.sh: mmdebstrap not found (apt-get install mmdebstrap)" >&2; exit 1; }

# have IMAGE: the image exists and --rebuild was not given.
have() { [[ $REBUILD == 0 ]] && "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
# step NAME CMD...: run CMD and print how long it took.
step() {
  local name=$1 s
  shift
  s=$(date +%s)
  echo "== $name"
  "$@"
  echo "== $name: $(($(date +%s) - s)) s"
}

# debian_image IMAGE INCLUDES: mmdebstrap a minbase Debian with INCLUDES and import it.
debian_image() {
  local image=$1 include=$2
  if have "$image"; then echo "$image exists"; return; fi
  mmdebstrap --variant=minbase ${include:+--include="$include"} \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$SUITE" - "$DEBIAN_MIRROR" |
    "$DOCKER" import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["/bin/bash"]' - "$image"
}

# scratch_image IMAGE ENTRYPOINT BINARY: FROM scratch with the static
# BINARY in /usr/local/bin, started as ENTRYPOINT when the pod gives no
# command (the pause sandbox, CoreDNS).
scratch_image() {
  local image=$1 entrypoint=$2 ctx
  shift 2
  if have "$image"; then echo "$image exists"; return; fi
  ctx="$OUT/ctx/${image//[\/:]/_}"
  rm -rf "$ctx" && mkdir -p "$ctx/bin" "$ctx/tmp"
  cp "$@" "$ctx/bin/"
  {
    echo "FROM scratch"
    echo "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    echo "COPY bin/ /usr/local/bin/"
    echo "COPY tmp/ /tmp/"
    if [[ $entrypoint == /pause ]]; then echo "COPY bin/pause /pause"; fi
    echo "ENTRYPOINT [\"$entrypoint\"]"
  } >"$ctx/Dockerfile"
  "$DOCKER" build -q -t "$image" "$ctx"
}

step "debian base ($BASE_IMAGE)" debian_image "$BASE_IMAGE" ""
step "debian with iptables ($IPTABLES_IMAGE)" debian_image "$IPTABLES_IMAGE" iptables,conntrack
step "node rootfs ($ROOTFS_IMAGE)" debian_image "$ROOTFS_IMAGE" "$NODE_PACKAGES"
step "debian with haproxy ($LB_ROOTFS_IMAGE)" debian_image "$LB_ROOTFS_IMAGE" haproxy

for b in kubeadm kubelet kubectl kube-controller-manager kube-scheduler kube-proxy crictl etcd coredns pause containerd ctr containerd-shim-runc-v2 kind-lb; do
  [[ -x $KIND_BIN/$b ]] || { echo "kind-images.sh: $KIND_BIN/$b missing: run make build-kind-bins" >&2; exit 1; }
done

# The names kubeadm v1.37.2 starts its images under.
mapfile -t KUBEADM_IMAGES < <("$KIND_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION")
image_named() { # image_named COMPONENT: kubeadm's image whose last path element is COMPONENT
  local i
  for i in "${KUBEADM_IMAGES[@]}"; do
    local n=${i%:*}
    [[ ${n##*/} == "$1" ]] && { echo "$i"; return; }
  done
  echo "kind-images.sh: kubeadm lists no $1 image" >&2
  return 1
}
printf 'kubeadm %s images:\n' "$K8S_VERSION"
printf '  %s\n' "${KUBEADM_IMAGES[@]}"
PAUSE=$(image_named pause)
ETCD=$(image_named etcd)
KCM=$(image_named kube-controller-manager)
SCHED=$(image_named kube-scheduler)
PROXY=$(image_named kube-proxy)
COREDNS=$(image_named coredns)

component_images() {
  scratch_image "freshcache.local/pause:$K8S_VERSION" /pause "$KIND_BIN/pause"
  scratch_image "freshcache.local/etcd:$K8S_VERSION" /usr/local/bin/etcd "$KIND_BIN/etcd"
  scratch_image "freshcache.local/kube-controller-manager:$K8S_VERSION" /usr/local/bin/kube-controller-manager "$KIND_BIN/kube-controller-manager"
  scratch_image "freshcache.local/kube-scheduler:$K8S_VERSION" /usr/local/bin/kube-scheduler "$KIND_BIN/kube-scheduler"
  scratch_image "freshcache.local/coredns:$K8S_VERSION" /usr/local/bin/coredns "$KIND_BIN/coredns"
}
step "component images" component_images

proxy_image() {
  local image=freshcache.local/kube-proxy:$K8S_VERSION ctx=$OUT/ctx/kube-proxy
  if have "$image"; then echo "$image exists"; return; fi
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp "$KIND_BIN/kube-proxy" "$ctx/"
  printf 'FROM %s\nCOPY kube-proxy /usr/local/bin/kube-proxy\n' "$IPTABLES_IMAGE" >"$ctx/Dockerfile"
  "$DOCKER" build -q -t "$image" "$ctx"
}
step "kube-proxy image" proxy_image

apiserver_base_image() {
  local ctx=$OUT/ctx/kube-apiserver-base
  if have "$APISERVER_BASE_IMAGE"; then echo "$APISERVER_BASE_IMAGE exists"; return; fi
  rm -rf "$ctx" && mkdir -p "$ctx/tmp"
  printf 'FROM scratch\nENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nCOPY tmp/ /tmp/\n' >"$ctx/Dockerfile"
  "$DOCKER" build -q -t "$APISERVER_BASE_IMAGE" "$ctx"
}
step "kube-apiserver base image" apiserver_base_image

busybox_image() {
  local ctx=$OUT/ctx/busybox
  if have "$BUSYBOX_IMAGE"; then echo "$BUSYBOX_IMAGE exists"; return; fi
  rm -rf "$ctx" && mkdir -p "$ctx/deb"
  (cd "$ctx/deb" && apt-get download busybox-static >/dev/null)
  dpkg-deb -x "$ctx"/deb/busybox-static_*.deb "$ctx/root"
  cp "$ctx/root/bin/busybox" "$ctx/busybox"
  printf 'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\nCMD ["/bin/sh"]\n' >"$ctx/Dockerfile"
  "$DOCKER" build -q -t "$BUSYBOX_IMAGE" "$ctx"
}
step "busybox image" busybox_image

node_image() {
  if have "$NODE_BASE_IMAGE"; then echo "$NODE_BASE_IMAGE exists"; return; fi
  local ctx=$OUT/ctx/node kind_dir
  kind_dir=$("$GO" mod download -json "$KIND_MODULE" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $kind_dir/images/base/files ]] || { echo "kind-images.sh: no images/base/files in $KIND_MODULE ($kind_dir)" >&2; return 1; }
  rm -rf "$ctx" && mkdir -p "$ctx/bin" "$ctx/images" "$ctx/freshcache"
  # kind's node files, from the module cache, as they are (module files are read-only).
  cp -r "$kind_dir/images/base/files" "$ctx/kind-files"
  chmod -R u+w "$ctx/kind-files"
  cp "$KIND_BIN"/{containerd,ctr,containerd-shim-runc-v2,crictl,kubeadm,kubelet,kubectl} "$ctx/bin/"
  cp "$ROOT"/hack/kind-node/* "$ctx/freshcache/"
  # The images kubeadm starts, under its names, saved one tarball each.
  local pair src dst
  for pair in "freshcache.local/pause:$K8S_VERSION=$PAUSE" "freshcache.local/etcd:$K8S_VERSION=$ETCD" \
    "freshcache.local/kube-controller-manager:$K8S_VERSION=$KCM" "freshcache.local/kube-scheduler:$K8S_VERSION=$SCHED" \
    "freshcache.local/kube-proxy:$K8S_VERSION=$PROXY" "freshcache.local/coredns:$K8S_VERSION=$COREDNS" \
    "$BUSYBOX_IMAGE=$BUSYBOX_IMAGE"; do
    src=${pair%%=*} dst=${pair#*=}
    "$DOCKER" tag "$src" "$dst"
    "$DOCKER" save -o "$ctx/images/$(basename "${dst%:*}").tar" "$dst"
    # Only our freshcache.local names stay in Docker's store.
    [[ $dst == "$src" ]] || "$DOCKER" rmi "$dst" >/dev/null
  done
  cat >"$ctx/Dockerfile" <<EOF
# Generated by hack/kind-images.sh: the kind node image for $K8S_VERSION, offline.
# The steps follow kind $KIND_MODULE's images/base/Dockerfile.
FROM $ROOTFS_IMAGE
COPY kind-files/usr/local/bin/ /usr/local/bin/
COPY kind-files/kind/ /kind/
COPY kind-files/etc/ /etc/
COPY bin/containerd bin/ctr bin/containerd-shim-runc-v2 bin/crictl /usr/local/bin/
COPY bin/kubeadm bin/kubelet bin/kubectl /usr/bin/
COPY images/ /kind/freshcache-preload/images/
COPY freshcache/ /kind/freshcache-preload/
RUN chmod 0755 /usr/local/bin/* /kind /kind/bin /kind/bin/* /kind/freshcache-preload/*.sh \\
 && mv /kind/freshcache-preload/*.service /etc/systemd/system/ \\
 && mkdir -p /etc/systemd/system/kubelet.service.d \\
 && mv /kind/freshcache-preload/05-freshcache-preload.conf /etc/systemd/system/kubelet.service.d/ \\
 && mkdir -p /opt/cni/bin && ln -sf /usr/lib/cni/* /opt/cni/bin/ \\
 && find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete \\
 && rm -f /lib/systemd/system/multi-user.target.wants/* \\
 && rm -f /etc/systemd/system/*.wants/* \\
 && rm -f /lib/systemd/system/local-fs.target.wants/* \\
 && rm -f /lib/systemd/system/sockets.target.wants/*udev* \\
 && rm -f /lib/systemd/system/sockets.target.wants/*initctl* \\
 && rm -f /lib/systemd/system/basic.target.wants/* \\
 && echo "ReadKMsg=no" >> /etc/systemd/journald.conf \\
 && ln -sf /usr/lib/systemd/systemd /sbin/init \\
 && systemctl enable kubelet.service containerd.service undo-mount-hacks.service \\
      freshcache-preload.service freshcache-cni.service \\
 && systemctl mask systemd-binfmt.service \\
 && mkdir -p /etc/kubernetes/manifests \\
 && ctr oci spec \\
    | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \\
    | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json \\
 && sed -i 's#^\([[:space:]]*sandbox_image[[:space:]]*=\).*#\1 "$PAUSE"#' /etc/containerd/config.toml \\
 && grep -q '"$PAUSE"' /etc/containerd/config.toml \\
 && echo "$K8S_VERSION" > /kind/version \\
 && containerd --version && runc --version && kubelet --version
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT [ "/kind/freshcache-preload/unprivileged-entrypoint.sh", "/usr/local/bin/entrypoint", "/sbin/init" ]
EOF
  "$DOCKER" build -t "$NODE_BASE_IMAGE" "$ctx"
}
step "node image ($NODE_BASE_IMAGE)" node_image

# lb_image: kind's load balancer on Debian's haproxy, kind-lb as `envoy`.
lb_image() {
  if have "$LB_IMAGE"; then echo "$LB_IMAGE exists"; return; fi
  local ctx="$OUT/ctx/kind-lb"
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp "$KIND_BIN/kind-lb" "$ctx/envoy"
  printf 'FROM %s\nCOPY envoy /usr/local/bin/envoy\nRUN mkdir -p /etc/haproxy /home/envoy && haproxy -v\n' "$LB_ROOTFS_IMAGE" >"$ctx/Dockerfile"
  "$DOCKER" build -q -t "$LB_IMAGE" "$ctx"
  # The image as kind runs it: configured through renamed files, round
  # robin over two HTTPS backends, one taken out by the health check.
  # A failed test removes the image, so that the next run builds it again.
  if ! KINDLB_IMAGE=$LB_IMAGE "$GO" -C lab test -count=1 -run '^TestImage$' ./pkg/kindlb/; then
    "$DOCKER" rmi "$LB_IMAGE" >/dev/null
    return 1
  fi
}
step "load balancer ($LB_IMAGE)" lb_image

echo "images:"
"$DOCKER" images --format '  {{.Repository}}:{{.Tag}} {{.Size}}' | grep freshcache.local
echo "hack/kind-up.sh now runs offline with NODE_BASE=$NODE_BASE_IMAGE APISERVER_BASE=$APISERVER_BASE_IMAGE (its default when they exist)"
