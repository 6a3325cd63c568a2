// runService in a real child process: real signals, real exit codes.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const fixture = fileURLToPath(new URL('./fixtures/service-main.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

interface Child {
  proc: ChildProcess;
  records: Record<string, unknown>[];
  waitFor(msg: string): Promise<Record<string, unknown>>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startFixture(mode: string): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', fixture, mode], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  const records: Record<string, unknown>[] = [];
  const waiters: { msg: string; resolve: (r: Record<string, unknown>) => void }[] = [];
  let buf = '';
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const r = JSON.parse(line) as Record<string, unknown>;
      records.push(r);
      for (const w of waiters.filter((x) => x.msg === r['msg'])) w.resolve(r);
    }
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    proc,
    records,
    exit,
    waitFor: (msg) => {
      const found = records.find((r) => r['msg'] === msg);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        waiters.push({ msg, resolve });
        void exit.then(({ code }) => reject(new Error(`fixture exited (${code}) before logging '${msg}'; stderr: ${stderr}`)));
      });
    },
  };
}

// Four children, each compiling TypeScript at start: generous on a loaded 2-core machine.
describe('runService in a child process', { timeout: 180_000 }, () => {
  it('SIGTERM: aborts, closes in reverse order, exits 0', async () => {
    const child = startFixture('ok');
    const listening = await child.waitFor('listening');
    assert.equal(typeof listening['port'], 'number');
    await child.waitFor('started');
    assert.equal((await fetch(`http://127.0.0.1:${String(listening['port'])}/readyz`)).status, 200);
    child.proc.kill('SIGTERM');
    assert.deepEqual(await child.exit, { code: 0, signal: null });
    assert.deepEqual(
      child.records.map((r) => r['msg']),
      ['listening', 'started', 'shutting down', 'aborted', 'closing second', 'closing first', 'stopped'],
    );
  });

  it('an unhandled rejection is logged and exits 1 after draining', async () => {
    const child = startFixture('reject');
    assert.deepEqual(await child.exit, { code: 1, signal: null });
    const err = child.records.find((r) => r['msg'] === 'unhandled promise rejection');
    assert.equal((err?.['err'] as Record<string, unknown>)['message'], 'nobody catches me');
    assert.ok(child.records.some((r) => r['msg'] === 'closing first'));
  });

  it('an uncaught exception is logged and exits 1', async () => {
    const child = startFixture('throw');
    assert.deepEqual(await child.exit, { code: 1, signal: null });
    const err = child.records.find((r) => r['msg'] === 'uncaught exception');
    assert.equal((err?.['err'] as Record<string, unknown>)['message'], 'uncaught boom');
  });

  it('a second signal during a stuck shutdown exits 1 at once', async () => {
    const child = startFixture('stuck');
    await child.waitFor('started');
    child.proc.kill('SIGTERM');
    await child.waitFor('aborted');
    child.proc.kill('SIGINT');
    assert.deepEqual(await child.exit, { code: 1, signal: null });
    assert.ok(child.records.some((r) => r['msg'] === 'second signal during shutdown, exiting now'));
  });
});
