#!/usr/bin/env bash
# kind-up.sh: run freshcache's kube-apiserver as the control plane of a kind
# cluster, with FreshResourceVersionZero on. docs/kind.md is the manual test
# script that goes with it.
#
# Usage: hack/kind-up.sh [--dry-run] [--ha | --control-planes N] [--workers N]
#                        [--name NAME] [--out DIR] [--feature-gates G=bool,...]
#                        [--apiserver-arg name=value]... [--offline | --online]
#
# Offline (no registry): `make kind-images` (hack/kind-images.sh) builds the
# node image and every image kubeadm starts from Debian packages and Go
# modules. When its images exist the script uses them (--offline insists,
# --online ignores them): NODE_BASE and APISERVER_BASE become
# freshcache.local/kind-node-base and freshcache.local/kube-apiserver-base,
# kind's kindnetd is off (the node image brings a bridge CNI), and after the
# cluster is up a busybox Deployment checks logs and exec.
#
# How our image gets into the cluster (the mechanics matter):
#   kind runs `kubeadm init` inside `kind create cluster`, and the kubelet
#   starts the kube-apiserver static pod right away. `kind load docker-image`
#   needs a running cluster, so it comes too late; and until our image is
#   there the stock kube-apiserver would run and refuse
#   --feature-gates=FreshResourceVersionZero=true. So:
#   1. build a static linux/amd64 kube-apiserver (CGO_ENABLED=0: the upstream
#      base image has no libc; `make build` output is dynamically linked);
#   2. image A: FROM registry.k8s.io/kube-apiserver:v1.37.2 + our binary;
#   3. `docker save` A into the build context of image B:
#      FROM kindest/node:v1.37.2 + A's tarball + a oneshot systemd unit that
#      imports it into containerd (k8s.io namespace, as `kind load` does) at
#      boot, ordered before kubelet.service;
#   4. `kind create cluster` with every node on image B. kubeadm's patches
#      directory (baked into B, enabled by kubeadmConfigPatches in the kind
#      config) sets the static pod's image to A with imagePullPolicy: Never;
#      a kubeadm ClusterConfiguration patch passes --feature-gates to
#      kube-apiserver only.
#   The generated files come from lab/cmd/kind-config (lab/pkg/kindconfig).
#
# --dry-run writes every generated file into $OUT (default _output/kind) and
# prints the commands it would run (each prefixed with "+ "), running none of
# them. It needs only Go and bash: no Docker engine, no kind.
#
# Environment: OUT, GO, DOCKER, KIND, KUBECTL, K8S_VERSION (default v1.37.2),
# APISERVER_BASE, NODE_BASE, APISERVER_IMAGE, NODE_IMAGE.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}
DOCKER=${DOCKER:-docker}
# kind and kubectl: the ones make build-kind-bins builds, else the PATH's.
if [[ -z ${KIND:-} ]]; then
  KIND=kind
  [[ -x $ROOT/_output/bin/kind ]] && KIND=$ROOT/_output/bin/kind
fi
if [[ -z ${KUBECTL:-} ]]; then
  KUBECTL=kubectl
  command -v kubectl >/dev/null || [[ ! -x $ROOT/_output/kindnode/bin/kubectl ]] || KUBECTL=$ROOT/_output/kindnode/bin/kubectl
fi
K8S_VERSION=${K8S_VERSION:-v1.37.2}
OFFLINE_NODE_BASE=freshcache.local/kind-node-base:${K8S_VERSION}
OFFLINE_APISERVER_BASE=freshcache.local/kube-apiserver-base:${K8S_VERSION}
WORKLOAD_IMAGE=${WORKLOAD_IMAGE:-freshcache.local/busybox:1.35.0}
# APISERVER_LDFLAGS: -ldflags for our kube-apiserver (make kind-up passes
# the version stamp make build-kind-bins uses, so Go's cache serves that build).
APISERVER_LDFLAGS=${APISERVER_LDFLAGS:-}
APISERVER_IMAGE=${APISERVER_IMAGE:-freshcache.local/kube-apiserver:${K8S_VERSION}-freshcache}
NODE_IMAGE=${NODE_IMAGE:-freshcache.local/kind-node:${K8S_VERSION}-freshcache}
OUT=${OUT:-_output/kind}

DRY_RUN=0
CONTROL_PLANES=1
WORKERS=1
NAME=freshcache
FEATURE_GATES=FreshResourceVersionZero=true
APISERVER_ARGS=()
MODE=auto

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --ha) CONTROL_PLANES=3 ;;
    --control-planes) CONTROL_PLANES=${2:?--control-planes needs a number}; shift ;;
    --control-planes=*) CONTROL_PLANES=${1#*=} ;;
    --workers) WORKERS=${2:?--workers needs a number}; shift ;;
    --workers=*) WORKERS=${1#*=} ;;
    --name) NAME=${2:?--name needs a value}; shift ;;
    --name=*) NAME=${1#*=} ;;
    --out) OUT=${2:?--out needs a directory}; shift ;;
    --out=*) OUT=${1#*=} ;;
    --feature-gates) FEATURE_GATES=${2:?--feature-gates needs a value}; shift ;;
    --feature-gates=*) FEATURE_GATES=${1#*=} ;;
    --apiserver-arg) APISERVER_ARGS+=("--apiserver-arg=${2:?--apiserver-arg needs name=value}"); shift ;;
    --apiserver-arg=*) APISERVER_ARGS+=("--apiserver-arg=${1#*=}") ;;
    --offline) MODE=offline ;;
    --online) MODE=online ;;
    -h|--help) usage; exit 0 ;;
    *) echo "kind-up.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
cd "$ROOT"

# run prints a command (shell-quoted, "+ " first) and runs it unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [[ $DRY_RUN == 0 ]]; then "$@"; fi
}

if [[ $DRY_RUN == 0 ]]; then
  for tool in "$DOCKER" "$KIND" "$KUBECTL"; do
    command -v "$tool" >/dev/null || { echo "kind-up.sh: $tool not found (try --dry-run)" >&2; exit 1; }
  done
  "$DOCKER" info >/dev/null 2>&1 || { echo "kind-up.sh: no Docker engine answers (try --dry-run)" >&2; exit 1; }
fi

# Offline when the images of hack/kind-images.sh exist and no base image was named.
if [[ $MODE == auto ]]; then
  MODE=online
  if [[ -z ${NODE_BASE:-}${APISERVER_BASE:-} ]] &&
    "$DOCKER" image inspect "$OFFLINE_NODE_BASE" "$OFFLINE_APISERVER_BASE" >/dev/null 2>&1; then
    MODE=offline
  fi
fi
KIND_CONFIG_ARGS=()
if [[ $MODE == offline ]]; then
  NODE_BASE=${NODE_BASE:-$OFFLINE_NODE_BASE}
  APISERVER_BASE=${APISERVER_BASE:-$OFFLINE_APISERVER_BASE}
  KIND_CONFIG_ARGS+=(--disable-default-cni)
  if [[ $DRY_RUN == 0 ]] && ! "$DOCKER" image inspect "$NODE_BASE" "$APISERVER_BASE" >/dev/null 2>&1; then
    echo "kind-up.sh: --offline: $NODE_BASE or $APISERVER_BASE missing: run make kind-images" >&2
    exit 1
  fi
fi
# Several control planes sit behind kind's load balancer, the image
# docker.io/envoyproxy/envoy (C++), which nothing here builds. Offline, and
# unless that image is in Docker, kind gets the shim, which starts
# hack/kind-images.sh's Debian haproxy image in its place (docs/kind.md).
KIND_ENVOY_IMAGE=docker.io/envoyproxy/envoy:v1.36.2
OFFLINE_LB_IMAGE=freshcache.local/kind-lb:haproxy
LB_SWAP=0
if [[ $MODE == offline && $CONTROL_PLANES -gt 1 && $DRY_RUN == 0 ]] &&
  ! "$DOCKER" image inspect "$KIND_ENVOY_IMAGE" >/dev/null 2>&1; then
  if ! "$DOCKER" image inspect "$OFFLINE_LB_IMAGE" >/dev/null 2>&1; then
    echo "kind-up.sh: $CONTROL_PLANES control planes need kind's load balancer: neither $KIND_ENVOY_IMAGE nor $OFFLINE_LB_IMAGE is here: run make kind-images" >&2
    exit 1
  fi
  LB_SWAP=1
fi
APISERVER_BASE=${APISERVER_BASE:-registry.k8s.io/kube-apiserver:${K8S_VERSION}}
NODE_BASE=${NODE_BASE:-kindest/node:${K8S_VERSION}}
echo "mode: $MODE (node base $NODE_BASE, kube-apiserver base $APISERVER_BASE)"

# timed CMD...: run CMD and print its wall time (for docs/kind.md).
timed() {
  local s
  s=$(date +%s)
  "$@"
  if [[ $DRY_RUN == 0 ]]; then echo "  ($(($(date +%s) - s)) s)"; fi
}

# 0. Generate the Dockerfiles, systemd unit, kubeadm patch and kind config.
#    This runs in --dry-run too: it is what the dry run is for.
echo "writing generated files into $OUT"
("$GO" -C lab run ./cmd/kind-config --out "$OUT" --name "$NAME" \
  --control-planes "$CONTROL_PLANES" --workers "$WORKERS" \
  --apiserver-base "$APISERVER_BASE" --node-base "$NODE_BASE" \
  --apiserver-image "$APISERVER_IMAGE" --node-image "$NODE_IMAGE" \
  --feature-gates "$FEATURE_GATES" ${APISERVER_ARGS[@]+"${APISERVER_ARGS[@]}"} \
  ${KIND_CONFIG_ARGS[@]+"${KIND_CONFIG_ARGS[@]}"}) | sed 's/^/  /'

echo "commands:"
# 1. Our kube-apiserver, static, for the image (linux/amd64).
LDFLAGS_ARGS=()
[[ -z $APISERVER_LDFLAGS ]] || LDFLAGS_ARGS=(-ldflags "$APISERVER_LDFLAGS")
timed run env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 "$GO" build -trimpath ${LDFLAGS_ARGS[@]+"${LDFLAGS_ARGS[@]}"} -o "$OUT/apiserver/kube-apiserver" ./cmd/kube-apiserver
# 2. Image A: upstream's kube-apiserver image with our binary.
timed run "$DOCKER" build --platform linux/amd64 -t "$APISERVER_IMAGE" "$OUT/apiserver"
# 3. Image B: the kind node image carrying A.
timed run "$DOCKER" save -o "$OUT/node/images/kube-apiserver.tar" "$APISERVER_IMAGE"
timed run "$DOCKER" build --platform linux/amd64 -t "$NODE_IMAGE" "$OUT/node"
# 4. The cluster. kind runs its nodes with --privileged; an engine whose
#    host lacks a capability cannot (runc: "unable to apply caps"), so kind
#    then gets hack/kind-docker-shim.sh as its docker.
SHIM_ENV=()
if [[ $DRY_RUN == 0 ]] && ! probe=$("$DOCKER" run --rm --privileged --entrypoint /bin/true "$NODE_IMAGE" 2>&1); then
  if [[ $probe != *"apply caps"* ]]; then
    echo "kind-up.sh: docker run --privileged $NODE_IMAGE failed: $probe" >&2
    exit 1
  fi
  SHIM_ENV+=(KIND_SHIM_UNPRIVILEGED=1)
  echo "docker cannot run --privileged containers here (runc: apply caps); kind gets hack/kind-docker-shim.sh"
fi
if [[ $LB_SWAP == 1 ]]; then
  SHIM_ENV+=("KIND_SHIM_IMAGE_FROM=$KIND_ENVOY_IMAGE" "KIND_SHIM_IMAGE_TO=$OFFLINE_LB_IMAGE")
  echo "kind's load balancer: $OFFLINE_LB_IMAGE (Debian's haproxy) in place of $KIND_ENVOY_IMAGE, through hack/kind-docker-shim.sh"
fi
KIND_ENV=()
if [[ ${#SHIM_ENV[@]} -gt 0 ]]; then
  mkdir -p "$OUT/docker-shim"
  ln -sf "$ROOT/hack/kind-docker-shim.sh" "$OUT/docker-shim/docker"
  KIND_ENV=(env "KIND_REAL_DOCKER=$(command -v "$DOCKER")" "${SHIM_ENV[@]}" "PATH=$OUT/docker-shim:$PATH")
fi
# Later kind commands on this cluster (get kubeconfig, load image-archive)
# exec into the nodes and need the same docker: kind.env holds the
# environment, one NAME=value a line (empty without the shim).
if [[ $DRY_RUN == 0 ]]; then
  if [[ ${#KIND_ENV[@]} -gt 0 ]]; then printf '%s\n' "${KIND_ENV[@]:1}"; fi >"$OUT/kind.env"
fi
# On Docker's fuse-overlayfs storage driver kind's entrypoint would pick the
# fuse-overlayfs snapshotter, which the offline node image does not have;
# containerd's own directory is on the node's /var volume, where overlayfs works.
if [[ $DRY_RUN == 0 && $MODE == offline && -z ${KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER:-} ]] &&
  [[ $("$DOCKER" info -f '{{.Driver}}' 2>/dev/null) == fuse-overlayfs ]]; then
  export KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER=overlayfs
  echo "Docker stores images on fuse-overlayfs: KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER=overlayfs"
fi
timed run ${KIND_ENV[@]+"${KIND_ENV[@]}"} "$KIND" create cluster --name "$NAME" --config "$OUT/kind-config.yaml" --wait 5m
timed run "$KUBECTL" --context "kind-$NAME" wait --for=condition=Ready nodes --all --timeout=5m
run "$KUBECTL" --context "kind-$NAME" get nodes -o wide
# 5. Show that the control plane runs our image, with our gates, and serves our metrics.
run "$KUBECTL" --context "kind-$NAME" -n kube-system get pods -l component=kube-apiserver \
  -o 'custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,NODE:.spec.nodeName'
printf '+ %q --context %q -n kube-system get pods -l component=kube-apiserver -o jsonpath={..command} | grep feature-gates\n' "$KUBECTL" "kind-$NAME"
printf '+ %q --context %q get --raw /metrics > %q\n' "$KUBECTL" "kind-$NAME" "$OUT/metrics.txt"
if [[ $DRY_RUN == 0 ]]; then
  "$KUBECTL" --context "kind-$NAME" -n kube-system get pods -l component=kube-apiserver -o 'jsonpath={..command}' |
    tr ' ' '\n' | tr -d '[]"' | tr ',' '\n' | grep -E '^--feature-gates=' | sort -u
  "$KUBECTL" --context "kind-$NAME" get --raw /metrics >"$OUT/metrics.txt"
  echo "apiserver_freshcache_ series: $(grep -c '^apiserver_freshcache_' "$OUT/metrics.txt")"
fi
# 6. Offline: a workload from the busybox image preloaded in the node image.
if [[ $MODE == offline ]]; then
  K=("$KUBECTL" --context "kind-$NAME")
  timed run "${K[@]}" create deployment hello --image="$WORKLOAD_IMAGE" --replicas=2 \
    -- /bin/sh -c 'while true; do echo "hello from $(hostname)"; sleep 5; done'
  timed run "${K[@]}" rollout status deployment/hello --timeout=3m
  run "${K[@]}" get pods -l app=hello -o wide
  timed run "${K[@]}" wait --for=condition=Ready pods -l app=hello --timeout=1m
  run sleep 6
  run "${K[@]}" logs deployment/hello --tail=2
  run "${K[@]}" exec deployment/hello -- /bin/sh -c 'echo exec works in $(hostname); ls /'
fi
if [[ $DRY_RUN == 0 ]]; then
  echo "ready: kubectl --context kind-$NAME get nodes; docs/kind.md has the manual tests"
else
  echo "dry run: nothing was built or started"
fi
