#!/usr/bin/env bash
# Runs 'freshcache-bench storage' against an etcd that 'freshcache-bench
# etcd' serves from a process of its own, and stops that process (by its
# PID) when done. The arguments go to 'freshcache-bench storage'; the
# bench-external-etcd make target passes the consistent-read target shape
# (CONSISTENT_READ_SHAPE in the Makefile).
#
# ETCD_CPUS and BENCH_CPUS, when set, pin each process to those CPUs
# (taskset -c syntax). Go sizes GOMAXPROCS from the affinity, and the
# report's machine line shows the bench's share. make bench-etcd-own-core
# gives etcd one core and the bench (clients and caches) the other, so
# that etcd's server work does not compete with the cache for a core, as
# when etcd runs on machines of its own.
set -euo pipefail

BENCH=${BENCH:-_output/bin/freshcache-bench}
# A command prefix, not a function: a function run in the background is a
# subshell, and killing its PID would leave etcd running.
etcd_pin=()
[[ -n "${ETCD_CPUS:-}" ]] && etcd_pin=(taskset -c "$ETCD_CPUS")
bench_pin=()
[[ -n "${BENCH_CPUS:-}" ]] && bench_pin=(taskset -c "$BENCH_CPUS")
log=$(mktemp)
"${etcd_pin[@]}" "$BENCH" etcd >"$log" 2>&1 &
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

"${bench_pin[@]}" "$BENCH" storage --etcd-endpoint="$endpoint" "$@"
