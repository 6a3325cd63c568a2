#!/bin/sh
# The splitlet images' entrypoint: the first argument names what runs.
#   <process> [args]        a splitlet process: services/<process>/dist/main.js (pod-worker, sync-loop, …)
#   splitlet [args]         the CLI
#   splitlet-node [args]    node setup (libs/node-setup): `run` is the node image's process
#   anything else           run as is (e.g. `sh`)
#
# SPLITLET_FOLLOW_NODE_NETNS=FILE (compose's node-local processes, which share the node container's
# network namespace): the node writes its namespace to FILE when ready (`splitlet-node run`). When
# the node container restarts it gets a new namespace and this container is left in the old, dead
# one (no route to NATS, pods unreachable): the process is stopped and the container exits 75, so
# its restart policy starts it again, inside the node's new namespace.
set -eu
app="${SPLITLET_APP_DIR:-/opt/splitlet}"
# A NATS password from a file (compose: the nats-auth volume; k8s: a Secret volume), so it is never
# written into the compose file or the pod spec: NATS_PASSWORD_FILE for a process, SPLITLET_NATS_PASSWORD_FILE for the CLI.
if [ -n "${NATS_PASSWORD_FILE:-}" ] && [ -z "${NATS_PASSWORD:-}" ]; then
  NATS_PASSWORD="$(cat "$NATS_PASSWORD_FILE")"
  export NATS_PASSWORD
fi
if [ -n "${SPLITLET_NATS_PASSWORD_FILE:-}" ] && [ -z "${SPLITLET_NATS_PASSWORD:-}" ]; then
  SPLITLET_NATS_PASSWORD="$(cat "$SPLITLET_NATS_PASSWORD_FILE")"
  export SPLITLET_NATS_PASSWORD
fi
bb=/usr/local/bin/busybox

# Runs "$@" as a child while the node's namespace is ours; forwards SIGTERM/SIGINT.
follow_node() {
  marker="$SPLITLET_FOLLOW_NODE_NETNS"
  mine="$($bb readlink /proc/self/ns/net)"
  "$@" &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null || true' TERM INT
  while kill -0 "$child" 2>/dev/null; do
    node="$($bb cat "$marker" 2>/dev/null || true)"
    if [ -n "$node" ] && [ "$node" != "$mine" ]; then
      echo "{\"level\":\"warn\",\"service\":\"entrypoint\",\"msg\":\"the node container restarted into a new network namespace; exiting so this container restarts inside it\",\"mine\":\"$mine\",\"node\":\"$node\"}" >&2
      kill -TERM "$child" 2>/dev/null || true
      wait "$child" || true
      exit 75
    fi
    $bb sleep 5 &
    wait $! || true
  done
  set +e
  wait "$child"
  exit $?
}

run() {
  if [ -n "${SPLITLET_FOLLOW_NODE_NETNS:-}" ]; then follow_node "$@"; fi
  exec "$@"
}

case "${1:-}" in
  splitlet) shift; run node "$app/services/cli/bin/splitlet.js" "$@" ;;
  splitlet-node) shift; exec node "$app/libs/node-setup/bin/splitlet-node.js" "$@" ;;
  "") echo "usage: <process> [args] | splitlet [args] | splitlet-node [args]" >&2; exit 2 ;;
esac
if [ -f "$app/services/$1/dist/main.js" ]; then
  p="$1"
  shift
  # The V8 flags `splitlet up` gives every process (PROCESS_NODE_FLAGS in services/cli/src/commands/up.ts:
  # a bounded young generation, and gc() for the heap trimmer); SPLITLET_NODE_FLAGS replaces them.
  # shellcheck disable=SC2086 # one flag per word
  run node ${SPLITLET_NODE_FLAGS---max-semi-space-size=8 --expose-gc} "$app/services/$p/dist/main.js" "$@"
fi
exec "$@"
