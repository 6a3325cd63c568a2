#!/bin/sh
# CI only: the node container's entrypoint where `privileged: true` is not possible (see
# compose.ci.yml). Remounts what privileged would leave writable, then runs the image's entrypoint.
set -eu
for m in /sys /proc/sys; do mount -o remount,bind,rw "$m"; done
for d in /sys/fs/cgroup/*; do
  [ -d "$d" ] && ! [ -L "$d" ] && mount -o remount,bind,rw "$d" 2>/dev/null || true
done
exec /usr/local/bin/splitlet-entrypoint "$@"
