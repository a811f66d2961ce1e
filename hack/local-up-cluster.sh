#!/usr/bin/env bash
# Start a local control plane with freshcache, in the spirit of upstream's
# hack/local-up-cluster.sh: build the binaries, then run cmd/local-up, which
# runs an embedded etcd and kube-apiserver(s) until Ctrl-C.
#
# Environment:
#   APISERVERS=2        number of kube-apiservers (HA, the seed bug's setup)
#   ETCD_MEMBERS=3      embedded etcd cluster size (1 or 3)
#   ETCD_SERVERS=URLs   use an existing etcd instead of the embedded one
#   DATA_DIR=dir        state directory (default _output/local-up)
#   WATCH_CACHE=upstream|freshcache
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
exec _output/bin/local-up "${args[@]}" "$@"
