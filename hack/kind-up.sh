#!/usr/bin/env bash
# kind-up.sh: run freshcache's kube-apiserver as the control plane of a kind
# cluster, with FreshResourceVersionZero on. docs/kind.md is the manual test
# script that goes with it.
#
# Usage: hack/kind-up.sh [--dry-run] [--ha | --control-planes N] [--workers N]
#                        [--name NAME] [--out DIR] [--feature-gates G=bool,...]
#                        [--apiserver-arg name=value]...
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
KIND=${KIND:-kind}
KUBECTL=${KUBECTL:-kubectl}
K8S_VERSION=${K8S_VERSION:-v1.37.2}
APISERVER_BASE=${APISERVER_BASE:-registry.k8s.io/kube-apiserver:${K8S_VERSION}}
NODE_BASE=${NODE_BASE:-kindest/node:${K8S_VERSION}}
APISERVER_IMAGE=${APISERVER_IMAGE:-freshcache.local/kube-apiserver:${K8S_VERSION}-freshcache}
NODE_IMAGE=${NODE_IMAGE:-freshcache.local/kind-node:${K8S_VERSION}-freshcache}
OUT=${OUT:-_output/kind}

DRY_RUN=0
CONTROL_PLANES=1
WORKERS=1
NAME=freshcache
FEATURE_GATES=FreshResourceVersionZero=true
APISERVER_ARGS=()

usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

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

# 0. Generate the Dockerfiles, systemd unit, kubeadm patch and kind config.
#    This runs in --dry-run too: it is what the dry run is for.
echo "writing generated files into $OUT"
("$GO" -C lab run ./cmd/kind-config --out "$OUT" --name "$NAME" \
  --control-planes "$CONTROL_PLANES" --workers "$WORKERS" \
  --apiserver-base "$APISERVER_BASE" --node-base "$NODE_BASE" \
  --apiserver-image "$APISERVER_IMAGE" --node-image "$NODE_IMAGE" \
  --feature-gates "$FEATURE_GATES" ${APISERVER_ARGS[@]+"${APISERVER_ARGS[@]}"}) | sed 's/^/  /'

echo "commands:"
# 1. Our kube-apiserver, static, for the image (linux/amd64).
run env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 "$GO" build -trimpath -o "$OUT/apiserver/kube-apiserver" ./cmd/kube-apiserver
# 2. Image A: upstream's kube-apiserver image with our binary.
run "$DOCKER" build --platform linux/amd64 -t "$APISERVER_IMAGE" "$OUT/apiserver"
# 3. Image B: the kind node image carrying A.
run "$DOCKER" save -o "$OUT/node/images/kube-apiserver.tar" "$APISERVER_IMAGE"
run "$DOCKER" build --platform linux/amd64 -t "$NODE_IMAGE" "$OUT/node"
# 4. The cluster.
run "$KIND" create cluster --name "$NAME" --config "$OUT/kind-config.yaml" --wait 5m
# 5. Show that the control plane runs our image and serves our metrics.
run "$KUBECTL" --context "kind-$NAME" -n kube-system get pods -l component=kube-apiserver \
  -o 'custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,NODE:.spec.nodeName'
printf '+ %q --context %q get --raw /metrics > %q\n' "$KUBECTL" "kind-$NAME" "$OUT/metrics.txt"
if [[ $DRY_RUN == 0 ]]; then
  "$KUBECTL" --context "kind-$NAME" get --raw /metrics >"$OUT/metrics.txt"
  echo "apiserver_freshcache_ series: $(grep -c '^apiserver_freshcache_' "$OUT/metrics.txt")"
  echo "ready: kubectl --context kind-$NAME get nodes; docs/kind.md has the manual tests"
else
  echo "dry run: nothing was built or started"
fi
