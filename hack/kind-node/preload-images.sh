#!/bin/sh
# hack/kind-images.sh: import every tarball in /kind/freshcache-preload/images
# into containerd's k8s.io namespace, as `kind load docker-image` does.
set -eu
i=0
until ctr version >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -ge 60 ]; then echo "containerd did not answer within 60s" >&2; exit 1; fi
  sleep 1
done
snapshotter=$(containerd config dump 2>/dev/null |
  sed -n "s/^[[:space:]]*snapshotter[[:space:]]*=[[:space:]]*[\"']\([^\"']\{1,\}\)[\"'].*/\1/p" | head -n 1)
snapshotter=${snapshotter:-overlayfs}
for tar in /kind/freshcache-preload/images/*.tar; do
  echo "importing $tar (snapshotter $snapshotter)"
  ctr --namespace=k8s.io images import --all-platforms --digests --snapshotter="$snapshotter" "$tar"
done
