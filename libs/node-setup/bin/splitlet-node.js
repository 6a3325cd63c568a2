#!/usr/bin/env node
// splitlet-node: node provisioning (containerd, CNI network, local images). The code lives in ../dist.
import { nodeCommand } from '../dist/index.js';

nodeCommand(process.argv.slice(2), process.stdout, process.env).then(
  (code) => process.stdout.write('', () => process.exit(code)),
  (e) => {
    const plain = e && (e.name === 'RuntimeError' || (e.code && String(e.code).startsWith('ERR_PARSE_ARGS')));
    process.stderr.write(`${plain ? e.message : (e && e.stack) || String(e)}\n`);
    process.exit(plain && e.name !== 'RuntimeError' ? 2 : 1);
  },
);
