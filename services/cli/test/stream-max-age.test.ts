/**
 * `STREAM_MAX_AGE` in the CLI: `splitlet up` and `splitlet provision` check it before anything
 * starts (a CliError naming the variable and the entry), and `up` passes it to every process.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { up, type UpOptions } from '../src/commands/up.js';
import { resolveStateDir } from '../src/state-dir.js';
import { streamMaxAgesOf } from '../src/target.js';

test('streamMaxAgesOf: the parsed ages; a bad entry is a CliError naming STREAM_MAX_AGE', () => {
  assert.deepEqual(streamMaxAgesOf({}), {});
  assert.deepEqual(streamMaxAgesOf({ STREAM_MAX_AGE: 'SL_SPANS=10m' }), { SL_SPANS: 600_000 });
  assert.throws(
    () => streamMaxAgesOf({ STREAM_MAX_AGE: 'SL_SPANS=10m,SL_FOO=1h' }),
    (e: Error) => e.name === 'CliError' && /^STREAM_MAX_AGE: unknown stream "SL_FOO"/.test(e.message),
  );
  assert.throws(() => streamMaxAgesOf({ STREAM_MAX_AGE: 'SL_CONFIG=1m' }), /STREAM_MAX_AGE: SL_CONFIG: a max age of 60 s is below the shortest allowed, 120 s/);
});

test('splitlet up refuses a bad STREAM_MAX_AGE before it starts NATS or any process', async () => {
  const root = mkdtempSync(join(tmpdir(), 'splitlet-sma-'));
  try {
    const s = resolveStateDir(root, {}, '/');
    const o: UpOptions = { nodeName: 'n1', podWorkers: 1, runtime: 'sim', criEndpoint: undefined, manifestUrl: undefined, restart: false, partitions: undefined, extraEnv: {} };
    let written = '';
    const out = new Writable({ write: (c: Buffer, _e, cb) => ((written += c.toString()), cb()) });
    await assert.rejects(up(s, o, { STREAM_MAX_AGE: 'SL_SPANS=0' }, out), /STREAM_MAX_AGE: SL_SPANS: the max age must be a positive duration/);
    assert.equal(written, '', 'nothing started');
    assert.deepEqual(
      readdirSync(s.logs).filter((f) => f.endsWith('.log')),
      [],
      'no process log',
    );
    assert.equal(existsSync(s.instanceFile), false, 'no instance');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
