#!/usr/bin/env bash
# demo-59848-kind.sh: kubernetes#59848 on a kind --ha cluster (docs/kind.md,
# section 3, scripted). Does a kubelet that restarts against a lagging
# apiserver start a pod that was deleted?
#
# The cluster: 3 control planes with stacked etcd and 1 worker (make kind-up
# KIND_ARGS=--ha; brought up here when no cluster of that name exists, and
# deleted at the end if it was). Apiserver i talks only to etcd member i.
# One trial:
#   1. the worker's kubelet talks to apiserver 1 directly (not kind's load
#      balancer), with WatchListClient on or off;
#   2. a StatefulSet's web-0 (pause, no token volume, as make demo-59848's)
#      runs on the worker;
#   3. etcd member 3 is frozen (SIGSTOP): members 1 and 2 keep quorum,
#      apiserver 3's cache stays where it was and nothing tells it so.
#      DEMO_KIND_CUT=partition cuts it from its peers instead (iptables on
#      port 2380 inside node 3's container); the member then loses its
#      leader within seconds and upstream's cacher reinitializes, so
#      whether upstream serves the deleted pod depends on the race between
#      that and the kubelet's first LIST (docs/kind.md);
#   4. the worker is cordoned and web-0 deleted through apiserver 1; the
#      worker's kubelet kills it, the StatefulSet controller re-creates
#      web-0 on control plane 2;
#   5. as the kubelet restarts (6), an admin LIST rv=0 of the worker's pods
#      through apiserver 3 (what a restarting kubelet sends first when its
#      watch-list is off), in the background;
#   6. the worker's kubelet is pointed at apiserver 3 and restarted;
#      "started again" is containerd's own record on the worker (crictl): a
#      container of the old web-0 (its UID) created after the restart,
#      looked for during DEMO_KIND_OBSERVE seconds;
#   7. heal, and clean up.
# Apiserver 3's cache is chosen by editing its static pod manifest:
# upstream (--watch-cache-implementation=upstream), freshcache (default
# gates) and freshcache-rv0-off (--feature-gates=FreshResourceVersionZero=false).
#
# The closing lines have make demo-59848's form:
#   demo-59848 <impl> watchlist=<on|off>: deleted pod started again: yes|no (k of n trials)
# It exits 1 if freshcache with its default gates ever starts the deleted
# pod, if freshcache-rv0-off does with a watch-list kubelet, or if upstream
# with a listing kubelet never does (a demo that cannot fail on upstream
# shows nothing).
#
# Environment: KIND_NAME (freshcache), DEMO_KIND_RUN (implementations,
# comma-separated; default all three), DEMO_KIND_WATCHLIST (off,on),
# DEMO_KIND_TRIALS (1), DEMO_KIND_OBSERVE (seconds, 60), DEMO_KIND_CUT
# (freeze|partition), DEMO_KIND_REPORT (markdown report; default
# _output/demo-59848-kind/report.md), DOCKER, KIND.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOCKER=${DOCKER:-docker}
if [[ -z ${KIND:-} ]]; then
  KIND=kind
  [[ -x $ROOT/_output/bin/kind ]] && KIND=$ROOT/_output/bin/kind
fi
NAME=${KIND_NAME:-freshcache}
IMPLS=${DEMO_KIND_RUN:-upstream,freshcache,freshcache-rv0-off}
MODES=${DEMO_KIND_WATCHLIST:-off,on}
TRIALS=${DEMO_KIND_TRIALS:-1}
OBSERVE=${DEMO_KIND_OBSERVE:-45}
CUT=${DEMO_KIND_CUT:-freeze}
OUTDIR=$ROOT/_output/demo-59848-kind
REPORT=${DEMO_KIND_REPORT:-$OUTDIR/report.md}

CP1=$NAME-control-plane
CP2=$NAME-control-plane2
CP3=$NAME-control-plane3
WORKER=$NAME-worker
NS=default
STS=web

log() { printf '%s demo-59848-kind: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 2; }

case $CUT in
  freeze) CUT_SAYS="etcd member 3 frozen (SIGSTOP)" ;;
  partition) CUT_SAYS="etcd member 3 cut off from its peers (iptables)" ;;
  *) die "DEMO_KIND_CUT=$CUT: want freeze or partition" ;;
esac
for impl in ${IMPLS//,/ }; do
  case $impl in upstream | freshcache | freshcache-rv0-off) ;; *) die "DEMO_KIND_RUN: unknown implementation $impl" ;; esac
done
for mode in ${MODES//,/ }; do
  case $mode in on | off) ;; *) die "DEMO_KIND_WATCHLIST: $mode, want on or off" ;; esac
done
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] || die "DEMO_KIND_TRIALS=$TRIALS: want a positive number"
[[ $OBSERVE =~ ^[1-9][0-9]*$ ]] || die "DEMO_KIND_OBSERVE=$OBSERVE: want seconds"

# k NODE ARGS: kubectl inside NODE against that node's own apiserver only.
k() {
  local node=$1
  shift
  "$DOCKER" exec -i "$node" kubectl --kubeconfig=/etc/kubernetes/admin.conf --server=https://127.0.0.1:6443 "$@"
}
ip_of() { "$DOCKER" inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }
now_ns() { "$DOCKER" exec "$WORKER" date +%s%N; }

# wait_for SECONDS WHAT CMD...: retry CMD every second until it succeeds.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local i
  for ((i = 0; i < limit; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  die "$what: not within ${limit}s"
}

CREATED=0
cleanup_cluster() {
  heal_member || true
  if [[ $CREATED == 1 ]]; then
    log "deleting the cluster this run brought up"
    make -C "$ROOT" --no-print-directory kind-down KIND_NAME="$NAME" >&2 || true
  fi
}

if ! "$KIND" get clusters 2>/dev/null | grep -qx "$NAME"; then
  log "no kind cluster $NAME: bringing one up with --ha"
  make -C "$ROOT" --no-print-directory kind-up KIND_ARGS="--ha --name $NAME" >&2
  CREATED=1
fi
trap cleanup_cluster EXIT
for n in "$CP1" "$CP2" "$CP3" "$WORKER"; do
  "$DOCKER" inspect "$n" >/dev/null 2>&1 || die "cluster $NAME has no node $n (it needs --ha: 3 control planes, 1 worker)"
done
IP1=$(ip_of "$CP1")
IP3=$(ip_of "$CP3")
PAUSE=$("$DOCKER" exec "$WORKER" sh -c "crictl images | awk '/pause/ {print \$1\":\"\$2; exit}'")
[[ -n $PAUSE ]] || die "no pause image on $WORKER"
mkdir -p "$OUTDIR"

# --- apiserver 3's cache ---------------------------------------------------

impl_line() {
  case $1 in
    upstream) echo '--watch-cache-implementation=upstream' ;;
    freshcache) echo '--watch-cache-implementation=freshcache' ;;
    freshcache-rv0-off) echo '--feature-gates=FreshResourceVersionZero=false' ;;
  esac
}

apiserver3_has() { "$DOCKER" exec "$CP3" sh -c "pgrep -a kube-apiserver | grep -q -- '$1'"; }
apiserver3_ready() { k "$CP3" get --raw /readyz --request-timeout=3s; }

# set_impl IMPL rewrites the one cache line of apiserver 3's manifest
# (kind-up writes --feature-gates=FreshResourceVersionZero=true there) and
# waits until the kubelet has restarted it with the new flag.
set_impl() {
  local line
  line=$(impl_line "$1")
  if ! apiserver3_has "$line"; then
    "$DOCKER" exec "$CP3" sed -i -E \
      "s#^( *)- --(feature-gates|watch-cache-implementation)=.*#\\1- $line#" /etc/kubernetes/manifests/kube-apiserver.yaml
    "$DOCKER" exec "$CP3" grep -q -- "- $line" /etc/kubernetes/manifests/kube-apiserver.yaml ||
      die "apiserver 3's manifest has no --feature-gates or --watch-cache-implementation line to rewrite"
    wait_for 180 "apiserver 3 restarted with $line" apiserver3_has "$line"
  fi
  wait_for 120 "apiserver 3 ready" apiserver3_ready
}

# --- the worker's kubelet --------------------------------------------------

# kubelet_on IP MODE: the worker's kubelet talks to the apiserver at IP,
# with WatchListClient off when MODE is off; restarted.
kubelet_on() {
  local ip=$1 mode=$2
  "$DOCKER" exec "$WORKER" sed -i -E "s#server: .*#server: https://$ip:6443#" /etc/kubernetes/kubelet.conf
  "$DOCKER" exec "$WORKER" sed -i '/^# demo-59848-kind$/,$d' /var/lib/kubelet/config.yaml
  if [[ $mode == off ]]; then
    "$DOCKER" exec "$WORKER" sh -c 'grep -q "^featureGates:" /var/lib/kubelet/config.yaml && exit 3;
      printf "# demo-59848-kind\nfeatureGates:\n  WatchListClient: false\n" >> /var/lib/kubelet/config.yaml' ||
      die "the worker's kubelet config has featureGates already; the demo appends its own"
  fi
  "$DOCKER" exec "$WORKER" systemctl restart kubelet
}

node_ready() {
  k "$CP1" get node "$WORKER" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' | grep -qx True
}

cordon() { k "$CP1" patch node "$1" --type=merge -p "{\"spec\":{\"unschedulable\":$2}}" >/dev/null; }

# --- the cut ---------------------------------------------------------------

CUT_ON=0
ETCD3=
cut_member() {
  case $CUT in
    partition)
      "$DOCKER" exec "$CP3" iptables -I INPUT -p tcp --dport 2380 -j DROP
      "$DOCKER" exec "$CP3" iptables -I OUTPUT -p tcp --dport 2380 -j DROP
      ;;
    freeze)
      ETCD3=$("$DOCKER" exec "$CP3" sh -c 'crictl inspect -o go-template --template "{{.info.pid}}" $(crictl ps -q --name etcd)')
      "$DOCKER" exec "$CP3" kill -STOP "$ETCD3"
      ;;
  esac
  CUT_ON=1
}
heal_member() {
  [[ $CUT_ON == 1 ]] || return 0
  case $CUT in
    partition)
      "$DOCKER" exec "$CP3" iptables -D INPUT -p tcp --dport 2380 -j DROP || true
      "$DOCKER" exec "$CP3" iptables -D OUTPUT -p tcp --dport 2380 -j DROP || true
      ;;
    freeze) "$DOCKER" exec "$CP3" kill -CONT "$ETCD3" || true ;;
  esac
  CUT_ON=0
}

# --- what the runtime says -------------------------------------------------

# old_containers UID: "<created ns> <state>" per container of the pod.
# crictl ps prints JSON one field a line, state before createdAt.
old_containers() {
  "$DOCKER" exec "$WORKER" crictl ps -a --label "io.kubernetes.pod.uid=$1" -o json |
    awk -F'"' '$2 == "state" {s = $4} $2 == "createdAt" {print $4, s}'
}

old_running() { old_containers "$1" | grep -q RUNNING; }
old_stopped() { ! old_running "$1"; }

sts_manifest() {
  cat <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: $STS, namespace: $NS}
spec:
  replicas: 1
  serviceName: $STS
  selector: {matchLabels: {app: $STS}}
  template:
    metadata: {labels: {app: $STS}}
    spec:
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: 1
      tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$WORKER, $CP2]}]}]
      containers: [{name: c, image: "$PAUSE", imagePullPolicy: IfNotPresent}]
EOF
}

web0() { k "$CP1" get pod -n "$NS" web-0 -o 'jsonpath={.metadata.uid} {.spec.nodeName} {.status.phase}' 2>/dev/null; }
web0_running_on() { [[ $(web0) =~ ^[^\ ]+\ $1\ Running$ ]]; }
web0_replaced() { local w; w=$(web0) && [[ ${w%% *} != "$1" && $w == *" $CP2 Running" ]]; }
no_sts() { [[ -z $(k "$CP1" get pods -n "$NS" -l app=$STS -o name 2>/dev/null) ]]; }

# --- one trial -------------------------------------------------------------

# trial IMPL MODE N sets T_VERDICT (yes|no), T_RV0, T_EVIDENCE and T_TOOK.
# It runs in this shell, not a subshell, so that a failure's exit trap
# heals the cut it made.
trial() {
  local impl=$1 mode=$2 n=$3 start dir
  start=$(date +%s)
  dir=$OUTDIR/$impl-watchlist-$mode/$n
  mkdir -p "$dir"
  log "$impl watchlist=$mode trial $n: setting up"
  set_impl "$impl"
  kubelet_on "$IP1" "$mode"
  wait_for 120 "the worker Ready through apiserver 1" node_ready
  k "$CP1" delete statefulset -n "$NS" "$STS" --ignore-not-found --cascade=foreground --timeout=120s >/dev/null
  wait_for 120 "no pod of the StatefulSet left" no_sts
  cordon "$CP2" true
  cordon "$WORKER" false
  sts_manifest | k "$CP1" apply -f - >/dev/null
  wait_for 120 "web-0 Running on the worker" web0_running_on "$WORKER"
  local old
  old=$(web0)
  old=${old%% *}
  k "$CP3" get pod -n "$NS" web-0 -o name --request-timeout=5s >/dev/null ||
    die "apiserver 3 does not show web-0 before the cut"

  log "$CUT_SAYS; delete web-0 (uid $old) through apiserver 1"
  cordon "$WORKER" true
  cordon "$CP2" false
  cut_member
  sleep 2
  k "$CP1" delete pod -n "$NS" web-0 --timeout=60s >/dev/null
  wait_for 120 "web-0 re-created and Running on $CP2" web0_replaced "$old"
  wait_for 60 "the old web-0's container stopped on the worker" old_stopped "$old"

  # 5. What a restarting kubelet with its watch-list off lists first,
  # asked by an admin of apiserver 3 as the kubelet restarts, in the
  # background: kubectl retries a 429 ten times, and kubelet 3 restarts a
  # frozen etcd after about 80 s.
  (
    t0=$(date +%s%3N)
    rc=0
    k "$CP3" get --raw "/api/v1/pods?fieldSelector=spec.nodeName%3D$WORKER&resourceVersion=0" --request-timeout=10s </dev/null >"$dir/rv0-list.out" 2>&1 || rc=$?
    echo "$rc" >"$dir/rv0-list.rc"
    echo $(($(date +%s%3N) - t0)) >"$dir/rv0-list.ms"
  ) &
  local lister=$!

  # 6. The kubelet restarts against apiserver 3.
  local restarted
  restarted=$(now_ns)
  log "restarting the worker's kubelet on apiserver 3; watching ${OBSERVE}s"
  kubelet_on "$IP3" "$mode"
  local verdict=no first="" i line created state
  for ((i = 0; i < OBSERVE; i += 2)); do
    while read -r created state; do
      [[ $created =~ ^[0-9]+$ ]] || continue
      if ((created > restarted)); then
        verdict=yes
        [[ -n $first ]] || first="$(((created - restarted) / 1000000)) ms after the restart, $state"
      fi
    done < <(old_containers "$old" 2>/dev/null || true)
    [[ $verdict == no ]] || break
    sleep 2
  done
  "$DOCKER" exec "$WORKER" journalctl -u kubelet --since "@$((restarted / 1000000000))" --no-pager >"$dir/kubelet.log" 2>&1 || true
  old_containers "$old" >"$dir/containers.txt" 2>&1 || true
  local evidence
  if [[ $verdict == yes ]]; then
    evidence="crictl on the worker: a container of the old web-0 (uid $old) created $first"
  else
    evidence="crictl on the worker: no container of the old web-0 (uid $old) created in the ${OBSERVE}s after the restart"
  fi

  # 5's answer.
  wait "$lister" || true
  local rv0 ms
  rv0=$(cat "$dir/rv0-list.out")
  ms=$(cat "$dir/rv0-list.ms")
  if [[ $(cat "$dir/rv0-list.rc") == 0 ]]; then
    if grep -q "\"uid\":\"$old\"" <<<"$rv0"; then rv0="the deleted web-0 (stale)"; else rv0="without the deleted web-0"; fi
  else
    rv0="error: $(grep -v '^[[:space:]]*$' <<<"$rv0" | tail -1 | cut -c1-160)"
  fi
  rv0="$rv0, in $((ms / 1000)).$((ms % 1000 / 100))s"

  # 7. Heal and clean up.
  log "heal; clean up"
  heal_member
  wait_for 120 "apiserver 3 ready after the heal" apiserver3_ready
  kubelet_on "$IP1" "$mode"
  k "$CP1" delete statefulset -n "$NS" "$STS" --cascade=foreground --timeout=120s >/dev/null
  wait_for 120 "the StatefulSet's pods gone" no_sts
  wait_for 120 "no container of the old web-0 running" old_stopped "$old"
  cordon "$WORKER" false
  cordon "$CP2" false
  T_VERDICT=$verdict T_RV0=$rv0 T_EVIDENCE=$evidence T_TOOK="$(($(date +%s) - start))s"
}

# --- the run ---------------------------------------------------------------

started_at=$(date -u '+%Y-%m-%d %H:%M')
# The commit the run starts at (its images are built from that tree).
commit=$(git -C "$ROOT" rev-parse HEAD)
dirty=
[[ -z $(git -C "$ROOT" status --porcelain --untracked-files=no) ]] || dirty=' (with uncommitted changes)'

declare -A YES
ROWS=()
for impl in ${IMPLS//,/ }; do
  for mode in ${MODES//,/ }; do
    YES[$impl/$mode]=0
    for ((n = 1; n <= TRIALS; n++)); do
      trial "$impl" "$mode" "$n"
      log "$impl watchlist=$mode trial $n: started again: $T_VERDICT ($T_EVIDENCE)"
      [[ $T_VERDICT == yes ]] && YES[$impl/$mode]=$((YES[$impl/$mode] + 1))
      ROWS+=("| $impl-watchlist-$mode | $n | $T_VERDICT | $T_TOOK | $T_RV0 | $T_EVIDENCE |")
    done
  done
done
# apiserver 3 back to freshcache's default gates, as kind-up left it.
set_impl freshcache

LINES=()
status=0
for impl in ${IMPLS//,/ }; do
  for mode in ${MODES//,/ }; do
    y=${YES[$impl/$mode]}
    v=no
    ((y == 0)) || v=yes
    LINES+=("demo-59848 $impl watchlist=$mode: deleted pod started again: $v ($y of $TRIALS trials) — kind --ha, $CUT_SAYS")
    case $impl/$mode/$v in
      freshcache/*/yes) log "FAIL: freshcache with its default gates started the deleted pod (watchlist=$mode)"; status=1 ;;
      freshcache-rv0-off/on/yes) log "FAIL: freshcache-rv0-off started the deleted pod with a watch-list kubelet"; status=1 ;;
      upstream/off/no) log "FAIL: upstream with a listing kubelet never started the deleted pod: this demo shows nothing"; status=1 ;;
    esac
  done
done

{
  echo "# kubernetes#59848 on kind: does a restarted kubelet start a deleted pod?"
  echo
  echo "Written by \`make demo-59848-kind\` (hack/demo-59848-kind.sh); every figure below is from this run."
  echo
  echo "- Ran: $started_at to $(date -u '+%H:%M') UTC, on commit \`$commit\`$dirty."
  echo "- Machine: $(nproc) cores; Docker $("$DOCKER" version -f '{{.Server.Version}}' 2>/dev/null)."
  echo "- Cluster: kind \`--ha\` ($CP1, $CP2, $CP3 with stacked etcd; $WORKER), the node image built here (docs/kind.md); apiserver i talks to etcd member i only."
  echo "- Trial: web-0 of a StatefulSet (pause, no token volume) on the worker, whose kubelet talks to apiserver 1; $CUT_SAYS; the worker cordoned and web-0 deleted through apiserver 1, re-created on $CP2; the worker's kubelet then restarted against apiserver 3 and watched for ${OBSERVE}s. \"Started again\" is containerd's record on the worker: a container of the old web-0 (its UID) created after the restart."
  echo "- Apiserver 3: upstream = \`--watch-cache-implementation=upstream\`; freshcache = default gates; freshcache-rv0-off = \`--feature-gates=FreshResourceVersionZero=false\`. watchlist=off: the worker's kubelet with WatchListClient=false (kubelets of 1.34 and older list at rv=0 first)."
  echo "- Trials per configuration: $TRIALS. The kubelet's log and the runtime's record of each trial: _output/demo-59848-kind/<configuration>/<trial>."
  echo
  echo "## Closing lines"
  echo
  echo '```'
  printf '%s\n' "${LINES[@]}"
  echo '```'
  echo
  echo "## Trials"
  echo
  echo "| configuration | trial | started again | took | apiserver 3's answer to an admin LIST rv=0 of the worker's pods after the delete | evidence |"
  echo "|---|---:|:-:|---:|---|---|"
  printf '%s\n' "${ROWS[@]}"
} >"$REPORT"
log "report: $REPORT"
printf '%s\n' "${LINES[@]}"
exit $status
