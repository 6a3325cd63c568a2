/**
 * The images' entrypoint (docker/splitlet-entrypoint.sh) runs a splitlet process with the V8 flags
 * `splitlet up` gives it (PROCESS_NODE_FLAGS), so compose and k8s run the processes alike;
 * SPLITLET_NODE_FLAGS replaces them. Runs the real script with sh against a stand-in app folder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { PROCESS_NODE_FLAGS } from '../src/commands/up.ts';

const entrypoint = resolve(import.meta.dirname, '..', '..', '..', 'docker', 'splitlet-entrypoint.sh');

/** What a process started by the entrypoint saw: its V8 flags and arguments. */
function run(env: Record<string, string>): { execArgv: string[]; argv: string[] } {
  const app = mkdtempSync(join(tmpdir(), 'entrypoint-'));
  try {
    const main = join(app, 'services', 'pod-worker', 'dist', 'main.js');
    mkdirSync(dirname(main), { recursive: true });
    writeFileSync(main, 'console.log(JSON.stringify({ execArgv: process.execArgv, argv: process.argv.slice(2) }));\n');
    const out = execFileSync('sh', [entrypoint, 'pod-worker', '--flag', 'x'], {
      // `node` on the PATH is the one running this test.
      env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, SPLITLET_APP_DIR: app, ...env },
      encoding: 'utf8',
    });
    return JSON.parse(out) as { execArgv: string[]; argv: string[] };
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}

test('the entrypoint starts a process with the flags splitlet up uses, and its arguments', () => {
  assert.deepEqual(run({}), { execArgv: [...PROCESS_NODE_FLAGS], argv: ['--flag', 'x'] });
});

test('SPLITLET_NODE_FLAGS replaces them (empty: none)', () => {
  assert.deepEqual(run({ SPLITLET_NODE_FLAGS: '--max-semi-space-size=16' }).execArgv, ['--max-semi-space-size=16']);
  assert.deepEqual(run({ SPLITLET_NODE_FLAGS: '' }).execArgv, []);
});
