#!/bin/sh
# hack/kind-images.sh: the node image's entrypoint, in front of kind's.
# Started by hack/kind-docker-shim.sh (an engine that cannot run
# --privileged containers), Docker mounts the cgroup v1 controllers
# read-only; systemd and the kubelet must create cgroups, so remount them
# read-write, as --privileged would have mounted them. A privileged node
# finds nothing to do.
set -eu
awk '($3 == "cgroup" || $3 == "cgroup2") && $4 ~ /^ro/ {print $2}' /proc/self/mounts |
  while read -r m; do
    mount -o remount,bind,rw "$m" || echo "unprivileged-entrypoint: cannot remount $m read-write" >&2
  done
# Without CAP_SYS_RESOURCE (hack/kind-docker-shim.sh drops what the host
# lacks) no process may lower its oom_score_adj, and runc fails to start the
# kubelet's -998 sandboxes ("can't get final child's PID from pipe"):
# containerd then clamps oom_score_adj to its own, as kind does in a user
# namespace.
bnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
if [ $(( (0x$bnd >> 24) & 1 )) -eq 0 ]; then
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml
fi
# The kubelet opens /dev/kmsg; kind's rootless fallback, for an engine
# that passed no /dev/kmsg.
[ -e /dev/kmsg ] || ln -s /dev/console /dev/kmsg
exec "$@"
