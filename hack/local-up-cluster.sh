#!/usr/bin/env bash
# Start a local cluster with freshcache, in the spirit of upstream's
# hack/local-up-cluster.sh: build the binaries, then run lab/cmd/local-up, which
# runs an embedded etcd, kube-apiserver(s), kube-controller-manager,
# kube-scheduler and kubemark hollow nodes until Ctrl-C.
#
# Environment:
#   APISERVERS=2        number of kube-apiservers (HA, the seed bug's setup)
#   ETCD_MEMBERS=3      embedded etcd cluster size (1 or 3)
#   ETCD_SERVERS=URLs   use an existing etcd instead of the embedded one
#   DATA_DIR=dir        state directory (default _output/local-up)
#   WATCH_CACHE=upstream|freshcache
#   NODES=N             hollow nodes (default 2; 0 for none)
#   CONTROLLERS=false   no kube-controller-manager and kube-scheduler
# Any arguments are passed on (unknown ones reach kube-apiserver), e.g.
#   hack/local-up-cluster.sh --feature-gates=FreshResourceVersionZero=true
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

make build >&2
args=()
[[ -n "${APISERVERS:-}" ]] && args+=("--apiservers=${APISERVERS}")
[[ -n "${ETCD_MEMBERS:-}" ]] && args+=("--etcd-members=${ETCD_MEMBERS}")
[[ -n "${ETCD_SERVERS:-}" ]] && args+=("--etcd-servers=${ETCD_SERVERS}")
[[ -n "${DATA_DIR:-}" ]] && args+=("--data-dir=${DATA_DIR}")
[[ -n "${WATCH_CACHE:-}" ]] && args+=("--watch-cache-implementation=${WATCH_CACHE}")
[[ -n "${NODES:-}" ]] && args+=("--nodes=${NODES}")
[[ -n "${CONTROLLERS:-}" ]] && args+=("--controllers=${CONTROLLERS}")
exec _output/bin/local-up "${args[@]}" "$@"
