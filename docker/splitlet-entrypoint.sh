#!/bin/sh
# The splitlet images' entrypoint: the first argument names what runs.
#   <process> [args]        a splitlet process: services/<process>/dist/main.js (pod-worker, sync-loop, …)
#   splitlet [args]         the CLI
#   splitlet-node [args]    node setup (libs/node-setup): `run` is the node image's process
#   anything else           run as is (e.g. `sh`)
set -eu
app=/opt/splitlet
case "${1:-}" in
  splitlet) shift; exec node "$app/services/cli/bin/splitlet.js" "$@" ;;
  splitlet-node) shift; exec node "$app/libs/node-setup/bin/splitlet-node.js" "$@" ;;
  "") echo "usage: <process> [args] | splitlet [args] | splitlet-node [args]" >&2; exit 2 ;;
esac
if [ -f "$app/services/$1/dist/main.js" ]; then
  p="$1"
  shift
  exec node "$app/services/$p/dist/main.js" "$@"
fi
exec "$@"
