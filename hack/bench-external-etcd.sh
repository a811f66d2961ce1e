#!/usr/bin/env bash
# Runs issue 4's target shape (see the bench-targets make target) against an
# etcd that 'freshcache-bench etcd' serves from a process of its own, and
# stops that process (by its PID) when done. Extra arguments go to
# 'freshcache-bench storage'.
set -euo pipefail

BENCH=${BENCH:-_output/bin/freshcache-bench}
BENCH_OUT=${BENCH_OUT:-docs/results}
log=$(mktemp)
"$BENCH" etcd >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"' EXIT

endpoint=""
for _ in $(seq 1 300); do
	endpoint=$(grep -m1 '^http' "$log" || true)
	[[ -n "$endpoint" ]] && break
	kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "etcd exited" >&2; exit 1; }
	sleep 0.1
done
[[ -n "$endpoint" ]] || { cat "$log" >&2; echo "etcd did not print its endpoint in 30s" >&2; exit 1; }

"$BENCH" storage --etcd-endpoint="$endpoint" --pods=20000 --nodes=200 \
	--scenarios=list-node,get --etcd-scenarios=get --rvs=consistent,0,consistent,0,consistent,0 \
	--concurrency=32 --pod-write-rate=0 --lease-write-rate=100 --no-sweep \
	--name=consistent-reads-external-etcd --out-dir="$BENCH_OUT" "$@"
