#!/usr/bin/env node
// The splitlet command. The code lives in ../dist (built by `npm run build`, which `npm ci` runs).
import('../dist/main.js').catch((e) => {
  if (e && e.code === 'ERR_MODULE_NOT_FOUND') {
    console.error('splitlet is not built yet: run `npm ci` (or `npm run build`) in the repository root first.');
    process.exit(1);
  }
  throw e;
});
