#!/usr/bin/env bash
# A Docker engine of splitlet's own, for the compose smoke test and testcontainers: its own
# containerd and dockerd with their own data roots, sockets and pid files under $ENGINE_DIR, no
# iptables or ip_forward changes, a bridge and address pool that clash with nothing else here
# (splitlet's own CNI subnets are 10.200-249.x.0/24). No registry is reachable, so the base images
# the Dockerfile takes as build ARGs are made locally (see MACHINE.md "Docker engine").
#
#   .ci/docker-engine.sh start         start containerd + dockerd (idempotent); prints DOCKER_HOST=…
#   .ci/docker-engine.sh base-images   build the local base images (splitlet-base/node, /nats, /debian)
#   .ci/docker-engine.sh stop          stop everything: containers, networks, dockerd, its
#                                      containerd, the bridge, mounts under $ENGINE_DIR; remove it
#   .ci/docker-engine.sh env           print the DOCKER_HOST=… line
#
# Needs root and `apt-get install --no-install-recommends docker.io docker-compose debootstrap`.
# ENGINE_DIR (default /tmp/splitlet-docker) holds everything but the debootstrap cache
# (CACHE_DIR, default /var/cache/splitlet-ci), which survives `stop` because debootstrap takes ~35 s.
set -euo pipefail

ENGINE_DIR="${ENGINE_DIR:-/tmp/splitlet-docker}"
CACHE_DIR="${CACHE_DIR:-/var/cache/splitlet-ci}"
BRIDGE="${ENGINE_BRIDGE:-spldock0}"
BRIDGE_CIDR="${ENGINE_BRIDGE_CIDR:-172.29.250.1/24}"
ADDRESS_POOL="${ENGINE_ADDRESS_POOL:-172.29.0.0/17}"
SOCK="$ENGINE_DIR/docker.sock"
CTRD_SOCK="$ENGINE_DIR/containerd/containerd.sock"
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"
export DOCKER_HOST="unix://$SOCK"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

log() { printf '[docker-engine] %s\n' "$*" >&2; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  mkdir -p "$ENGINE_DIR/containerd" "$ENGINE_DIR/data" "$ENGINE_DIR/exec"
  if alive "$ENGINE_DIR/dockerd.pid" && docker info >/dev/null 2>&1; then
    log "already running ($DOCKER_HOST)"
    echo "DOCKER_HOST=$DOCKER_HOST"
    return 0
  fi
  if ! alive "$ENGINE_DIR/containerd.pid"; then
    cat >"$ENGINE_DIR/containerd/config.toml" <<EOF
version = 2
root = "$ENGINE_DIR/containerd/root"
state = "$ENGINE_DIR/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
EOF
    containerd --config "$ENGINE_DIR/containerd/config.toml" >"$ENGINE_DIR/containerd.log" 2>&1 &
    echo $! >"$ENGINE_DIR/containerd.pid"
    for _ in $(seq 1 200); do [ -S "$CTRD_SOCK" ] && break; sleep 0.1; done
    [ -S "$CTRD_SOCK" ] || { tail -20 "$ENGINE_DIR/containerd.log" >&2; log "containerd did not start"; return 1; }
  fi
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$BRIDGE_CIDR" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  dockerd --data-root "$ENGINE_DIR/data" --exec-root "$ENGINE_DIR/exec" --pidfile "$ENGINE_DIR/dockerd.pid" \
    -H "$DOCKER_HOST" --containerd "$CTRD_SOCK" --iptables=false --ip-forward=false --ip-masq=false \
    --bridge "$BRIDGE" --ip 127.0.0.1 --default-address-pool "base=$ADDRESS_POOL,size=24" \
    >"$ENGINE_DIR/dockerd.log" 2>&1 &
  for _ in $(seq 1 300); do docker info >/dev/null 2>&1 && break; sleep 0.1; done
  docker info >/dev/null 2>&1 || { tail -20 "$ENGINE_DIR/dockerd.log" >&2; log "dockerd did not start"; return 1; }
  log "running: $DOCKER_HOST (data root $ENGINE_DIR/data)"
  echo "DOCKER_HOST=$DOCKER_HOST"
}

# Waits for the pid in $1 to exit after SIGTERM; SIGKILL after $2 seconds.
stop_pid() {
  local file="$1" grace="$2" pid
  alive "$file" || { rm -f "$file"; return 0; }
  pid="$(cat "$file")"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((grace * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$file"
}

stop() {
  if alive "$ENGINE_DIR/dockerd.pid" && docker info >/dev/null 2>&1; then
    local ids
    ids="$(docker ps -aq)"
    [ -z "$ids" ] || docker rm -f -v $ids >/dev/null 2>&1 || true
    docker network prune -f >/dev/null 2>&1 || true
    docker volume prune -f >/dev/null 2>&1 || true
  fi
  stop_pid "$ENGINE_DIR/dockerd.pid" 20
  # Shims of containers dockerd could not stop serve our containerd's socket; they go with it.
  local shims
  shims="$(pgrep -f "containerd-shim.*-address $CTRD_SOCK" || true)"
  stop_pid "$ENGINE_DIR/containerd.pid" 10
  [ -z "$shims" ] || kill -KILL $shims 2>/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
  ip link del docker0 2>/dev/null || true
  # Bridges dockerd made for compose networks (br-<id>) whose addresses are in our pool.
  local prefix="${ADDRESS_POOL%%.0.0/*}."
  for br in $(ip -o -4 addr show | awk -v p="$prefix" '$2 ~ /^br-/ && index($4, p) == 1 {print $2}'); do ip link del "$br" 2>/dev/null || true; done
  if [ -d "$ENGINE_DIR" ]; then
    awk -v d="$ENGINE_DIR" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$ENGINE_DIR"
  fi
  log "stopped and removed"
}

# Imports a root filesystem folder as an image: `docker import` of its tar.
import_dir() {
  local dir="$1" tag="$2"
  shift 2
  tar -C "$dir" -c . | docker import "$@" - "$tag" >/dev/null
  log "image $tag ($(du -sh "$dir" | cut -f1))"
}

# Copies the shared libraries `ldd` lists for a binary into a root filesystem.
copy_libs() {
  local bin="$1" rootfs="$2" lib
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
}

base_images() {
  local work node
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  node="$(readlink -f "$ROOT/node_modules/node/bin/node")"
  [ -x "$node" ] || { log "no Node binary at $ROOT/node_modules/node/bin/node: run npm ci first"; return 1; }

  # splitlet-base/node: what node:24-bookworm-slim offers the Dockerfile (node in /usr/local/bin,
  # a `node` user with uid 1000, /bin/sh), from the npm `node` package's binary and busybox-static.
  local r="$work/node"
  mkdir -p "$r/usr/local/bin" "$r/bin" "$r/etc" "$r/tmp" "$r/home/node" "$r/root"
  cp "$node" "$r/usr/local/bin/node"
  copy_libs "$node" "$r"
  cp /bin/busybox "$r/bin/busybox"
  for a in sh wget cat ls mkdir rm env sleep; do ln -sf busybox "$r/bin/$a"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnode:x:1000:\n' >"$r/etc/group"
  chmod 1777 "$r/tmp"
  chown 1000:1000 "$r/home/node"
  import_dir "$r" splitlet-base/node:local --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["node"]'

  # splitlet-base/nats: Debian's nats-server (2.9), its libraries, busybox wget (the healthcheck)
  # and cat (the README reads the CLI's password with `docker compose exec nats cat /auth/users/cli`,
  # as nats:2.10-alpine allows).
  r="$work/nats"
  mkdir -p "$r/usr/sbin" "$r/tmp"
  mkdir -p "$r/bin"
  cp /usr/sbin/nats-server "$r/usr/sbin/nats-server"
  copy_libs /usr/sbin/nats-server "$r"
  cp /bin/busybox "$r/bin/busybox"
  for a in sh wget cat; do ln -sf busybox "$r/bin/$a"; done
  chmod 1777 "$r/tmp"
  import_dir "$r" splitlet-base/nats:local --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' --change 'ENTRYPOINT ["/usr/sbin/nats-server"]' --change 'EXPOSE 4222 8222'

  # splitlet-base/debian: debootstrap --variant=minbase bookworm with the node image's packages
  # already in (the Dockerfile installs only what its base lacks), cached as a tarball.
  local pkgs=containerd,runc,containernetworking-plugins,busybox-static,iproute2,ca-certificates
  local tarball="$CACHE_DIR/debian-bookworm-$(echo "$pkgs" | md5sum | cut -c1-8).tar"
  if [ ! -s "$tarball" ]; then
    mkdir -p "$CACHE_DIR"
    log "debootstrap bookworm (cached in $tarball afterwards)"
    debootstrap --variant=minbase --include="$pkgs" bookworm "$work/debian" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log" >&2; return 1; }
    rm -rf "$work/debian/var/cache/apt/archives/"*.deb "$work/debian/var/lib/apt/lists/"*
    tar -C "$work/debian" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  fi
  docker import --change 'CMD ["bash"]' "$tarball" splitlet-base/debian:local >/dev/null
  log "image splitlet-base/debian:local ($(du -h "$tarball" | cut -f1))"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  base-images) base_images ;;
  env) echo "DOCKER_HOST=$DOCKER_HOST" ;;
  *)
    echo "usage: $0 start|base-images|stop|env" >&2
    exit 2
    ;;
esac
