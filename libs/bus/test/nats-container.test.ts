/**
 * The bus suites that start NATS with `startTestNats` once more, against NATS in a container started by
 * testcontainers (`@testcontainers/nats`) instead of the local binary: where a Docker engine is
 * reachable (DOCKER_HOST; CI starts one with .ci/docker-engine.sh and builds a local NATS image,
 * NATS_TEST_IMAGE). Where none is, the test prints why and skips.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerEngineSkipReason } from '@splitlet/testkit';

/** The suites of this folder that start their server with `startTestNats` (and so can use a container). */
const SUITES = readdirSync(import.meta.dirname)
  .filter((f) => f.endsWith('.test.ts') && f !== 'nats-container.test.ts' && readFileSync(join(import.meta.dirname, f), 'utf8').includes('startTestNats('))
  .map((f) => join(import.meta.dirname, f));

test('the bus suites pass against a NATS container (testcontainers)', { timeout: 300_000 }, async (t) => {
  assert.ok(SUITES.length >= 2, `suites using startTestNats: ${SUITES.join(', ')}`);
  const reason = await containerEngineSkipReason();
  if (reason !== undefined) {
    process.stdout.write(`# skipped: ${reason}\n`);
    t.skip(reason);
    return;
  }
  // Without NODE_TEST_CONTEXT, which would make the child report to this runner instead of printing TAP.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-concurrency=1', ...SUITES], {
    env: {
      ...env,
      SPLITLET_TEST_NATS: 'testcontainers',
      TESTCONTAINERS_RYUK_DISABLED: process.env['TESTCONTAINERS_RYUK_DISABLED'] ?? 'true',
      TESTCONTAINERS_HOST_OVERRIDE: process.env['TESTCONTAINERS_HOST_OVERRIDE'] ?? '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  const count = (what: string): number => Number(new RegExp(`^# ${what} (\\d+)$`, 'm').exec(out)?.[1] ?? NaN);
  // The runner passes each file's stderr on as TAP comments.
  const used = `${out}\n${err}`.match(/testkit: NATS container [^\n]*/g) ?? [];
  t.diagnostic(`against a container: ${count('pass')} passed, ${count('fail')} failed; ${used.join('; ')}`);
  assert.equal(
    code,
    0,
    `the suites fail against the container:\n${out
      .split('\n')
      .filter((l) => /^\s*not ok|error|expected|actual/.test(l))
      .slice(0, 40)
      .join('\n')}\n${err.slice(-2000)}`,
  );
  assert.equal(count('fail'), 0);
  assert.ok(count('pass') >= 10, `the suites ran (${count('pass')} passed)`);
  assert.equal(used.length, SUITES.length, 'each suite used a container, not the local binary');
});
