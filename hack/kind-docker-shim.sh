#!/usr/bin/env bash
# kind-docker-shim.sh: the `docker` that hack/kind-up.sh puts first in kind's
# PATH when this Docker engine cannot run --privileged containers, or when
# kind's load-balancer image must be swapped for the offline one.
#
# Why: a privileged container gets every capability the kernel knows, and
# runc fails ("unable to apply caps: operation not permitted") when the
# host's bounding set lacks one, as on the development machine (a VM whose
# bounding set has no CAP_SYS_RESOURCE). kind v0.33 always runs its nodes
# with `docker run --privileged` and `docker exec --privileged`.
#
# What: `run --privileged` becomes what --privileged means, minus the
# missing capabilities: every capability the bounding set holds, no
# seccomp/AppArmor (kind passes those itself), /proc and /sys paths
# unmasked, every device allowed and /dev/kmsg passed. `exec --privileged` drops the flag (an
# exec'd process gets the container's capabilities). Everything else goes to
# the real docker unchanged. The node image's entrypoint
# (hack/kind-node/unprivileged-entrypoint.sh) remounts the cgroup v1
# controllers read-write, as --privileged would have mounted them.
#
# The load balancer: with several control planes kind v0.33 runs
# docker.io/envoyproxy/envoy, which an offline machine cannot pull or build.
# With KIND_SHIM_IMAGE_FROM and KIND_SHIM_IMAGE_TO set, `run` starts TO
# where kind asked for FROM (hack/kind-up.sh: envoy's image to the offline
# freshcache.local/kind-lb:haproxy, which runs kind's command unchanged).
#
# Environment: KIND_REAL_DOCKER (the docker binary to run);
# KIND_SHIM_UNPRIVILEGED (1: replace --privileged as above);
# KIND_SHIM_IMAGE_FROM, KIND_SHIM_IMAGE_TO (the image swap).
set -euo pipefail
real=${KIND_REAL_DOCKER:?KIND_REAL_DOCKER must name the real docker}
unprivileged=${KIND_SHIM_UNPRIVILEGED:-0}
image_from=${KIND_SHIM_IMAGE_FROM:-}
image_to=${KIND_SHIM_IMAGE_TO:-}

# Capability names by number (linux/capability.h), for --cap-drop.
caps=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
  LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
  SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE
  SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP
  MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
  CHECKPOINT_RESTORE)

# unprivileged_flags prints the flags that replace --privileged, one a line.
unprivileged_flags() {
  local bnd last i
  bnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
  last=$(cat /proc/sys/kernel/cap_last_cap)
  echo "--cap-add=ALL"
  for ((i = 0; i <= last && i < ${#caps[@]}; i++)); do
    if ((((bnd >> i) & 1) == 0)); then echo "--cap-drop=${caps[i]}"; fi
  done
  echo "--security-opt=systempaths=unconfined"
  echo "--device-cgroup-rule=a *:* rwm"
  # --privileged would pass every host device; the kubelet needs /dev/kmsg.
  if [[ -e /dev/kmsg ]]; then echo "--device=/dev/kmsg"; fi
}

if [[ $# -gt 0 && ($1 == run || $1 == exec) ]]; then
  cmd=$1
  shift
  args=()
  while [[ $# -gt 0 ]]; do
    if [[ $1 == --privileged && $unprivileged == 1 ]]; then
      if [[ $cmd == run ]]; then
        mapfile -t flags < <(unprivileged_flags)
        args+=("${flags[@]}")
      fi
    elif [[ $cmd == run && -n $image_from && $1 == "$image_from" ]]; then
      args+=("$image_to")
    else
      args+=("$1")
    fi
    shift
  done
  exec "$real" "$cmd" "${args[@]}"
fi
exec "$real" "$@"
