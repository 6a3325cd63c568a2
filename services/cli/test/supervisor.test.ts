/**
 * The supervisor's health ports with real child processes: a port file is the current process's (a
 * stale one, from an earlier run or the process's previous life, is removed at each start), and
 * `portsPending()` says when instance.json still needs refreshing — from each start until the
 * process wrote its port (in the snapshot that was saved), not while it runs or waits to be restarted.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { eventually } from '@splitlet/testkit';
import { Supervisor } from '../src/up/supervisor.js';

/** A process that writes its pid as its port once told to (the file `<port file>.go` appears), then runs until killed. */
const CHILD = `
import { existsSync, renameSync, writeFileSync } from 'node:fs';
const file = process.env.PORT_FILE;
const wait = setInterval(() => {
  if (!existsSync(file + '.go')) return;
  clearInterval(wait);
  writeFileSync(file + '.tmp', process.pid + '\\n');
  renameSync(file + '.tmp', file);
}, 20);
setInterval(() => undefined, 60_000);
`;

describe('Supervisor health ports', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'supervisor-'));
    writeFileSync(join(dir, 'child.mjs'), CHILD);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a port file is removed at each start; ports are pending from each start until the process wrote its port', async () => {
    const portFile = join(dir, 'svc.port');
    writeFileSync(portFile, '4242\n'); // an earlier run's
    let changes = 0;
    let notes = '';
    const out = new PassThrough();
    out.on('data', (c: Buffer) => (notes += c.toString()));
    const sup = new Supervisor({ nodeBin: process.execPath, logsDir: dir, out, restart: true, color: false, format: 'json', onChange: () => changes++ });
    const wait = { timeoutMs: 30_000, intervalMs: 20 };
    try {
      sup.start({ name: 'svc', main: join(dir, 'child.mjs'), env: { PORT_FILE: portFile }, portFile });
      assert.equal(changes, 1, 'a start is a change');
      const first = sup.snapshot()[0]!;
      assert.equal(first.healthPort, undefined, "the earlier run's port is not the process's");
      assert.equal(sup.portsPending(), true);
      const saved = sup.snapshot(); // as instance.json saved it, before the port was written
      writeFileSync(`${portFile}.go`, '');
      await eventually(() => !sup.portsPending(), { ...wait, message: 'the port written' });
      assert.deepEqual(sup.snapshot(), [{ name: 'svc', pid: first.pid, healthPort: first.pid }]);
      assert.equal(sup.portsPending(saved), true, 'pending in the snapshot saved before the port was written: the next pass saves it');

      // Killed: restarted after 1 s. Nothing is pending meanwhile, and then only until the new
      // process wrote its port; the previous process's is gone.
      rmSync(`${portFile}.go`);
      process.kill(first.pid, 'SIGKILL');
      await eventually(() => notes.includes('restarting in 1s'), { ...wait, message: 'the restart noted' });
      assert.equal(sup.portsPending(), false, 'nothing pending while it waits to be restarted');
      await eventually(() => changes === 2, { ...wait, message: 'the restart' });
      const second = sup.snapshot()[0]!;
      assert.notEqual(second.pid, first.pid);
      assert.equal(second.healthPort, undefined, "the previous process's port is gone");
      assert.equal(sup.portsPending(), true);
      writeFileSync(`${portFile}.go`, '');
      await eventually(() => !sup.portsPending(), { ...wait, message: 'the new port written' });
      assert.equal(sup.snapshot()[0]!.healthPort, second.pid);
    } finally {
      await sup.stopAll({ graceMs: 5000, ordered: false });
    }
  });
});
