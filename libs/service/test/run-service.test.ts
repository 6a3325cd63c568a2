import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Counter, Registry } from 'prom-client';
import { createLogger, type Logger } from '@splitlet/telemetry';
import { isServiceError, runService, type RunServiceOptions } from '../src/index.js';

function captureLogger(): { logger: Logger; records: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const logger = createLogger({ service: 'test', level: 'debug', stream: { write: (l: string) => lines.push(l) } });
  return { logger, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** Options with process events off and `exit` recorded instead of performed. */
function testOptions(over: Partial<RunServiceOptions> & Pick<RunServiceOptions, 'start'>) {
  const { logger, records } = captureLogger();
  const exits: number[] = [];
  const options: RunServiceOptions = {
    name: 'test-svc',
    logger,
    port: 0,
    handleProcessEvents: false,
    exit: (code) => exits.push(code),
    ...over,
  };
  return { options, exits, records };
}

async function get(url: string, method = 'GET'): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(url, { method });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

describe('runService', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'splitlet-service-test-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('serves health, readiness and metrics, and drains closers in reverse order', async (tc) => {
    const registry = new Registry();
    new Counter({ name: 'splitlet_test_total', help: 'test', registers: [registry] }).inc(3);
    const order: string[] = [];
    let releaseStart: () => void = () => {};
    const gate = new Promise<void>((r) => (releaseStart = r));
    let startSignal: AbortSignal | undefined;
    const portFile = join(dir, 'health.port');
    const { options, exits, records } = testOptions({
      registry,
      portFile,
      start: async ({ signal, onClose, health }) => {
        startSignal = signal;
        onClose({ name: 'bus', close: () => void order.push('bus') });
        onClose(async function telemetry() {
          await Promise.resolve();
          order.push('telemetry');
        });
        health.register('pleg', () => ({ ok: false, reason: 'pleg was last seen active 200000 ms ago; threshold is 180000 ms' }));
        health.register('leases', () => ({ ok: false, reason: 'no partitions yet' }), { readiness: true });
        await gate;
        return [{ name: 'adapters', close: () => void order.push('adapters') }, () => void order.push('anonymous')];
      },
    });
    const running = runService(options);
    // A failed assertion must not leave the server listening (the test process would never end).
    tc.after(async () => {
      releaseStart();
      await (await running.catch(() => undefined))?.shutdown('cleanup');
    });
    // The listening line is written before start runs.
    const port = await waitFor(() => records().find((r) => r['msg'] === 'listening')?.['port'] as number | undefined);
    const url = `http://127.0.0.1:${port}`;
    assert.equal(await readFile(portFile, 'utf8'), `${port}\n`);

    let ready = await get(`${url}/readyz`);
    assert.equal(ready.status, 503);
    assert.match(ready.body, /^lifecycle: starting\n/);
    const healthz = await get(`${url}/healthz`);
    assert.equal(healthz.status, 503);
    assert.equal(healthz.body, 'pleg: pleg was last seen active 200000 ms ago; threshold is 180000 ms\n');

    releaseStart();
    const service = await running;
    assert.equal(service.port, port);
    assert.equal(service.url, url);
    ready = await get(`${url}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal(ready.body, 'pleg: pleg was last seen active 200000 ms ago; threshold is 180000 ms\nleases: no partitions yet\n');

    const metrics = await get(`${url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.type ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(metrics.body, /^splitlet_test_total 3$/m);
    assert.equal((await get(`${url}/nope`)).status, 404);
    assert.equal((await get(`${url}/healthz`, 'POST')).status, 405);

    assert.equal(startSignal?.aborted, false);
    assert.equal(await service.shutdown('test'), 0);
    assert.deepEqual(order, ['anonymous', 'adapters', 'telemetry', 'bus']);
    assert.deepEqual(exits, [0]);
    assert.equal(startSignal?.aborted, true);
    assert.ok(isServiceError(startSignal?.reason, 'ShuttingDown'));
    await assert.rejects(stat(portFile), { code: 'ENOENT' });
    await assert.rejects(fetch(`${url}/healthz`));
    assert.equal(await service.shutdown('again'), 0, 'idempotent');
    assert.deepEqual(exits, [0]);
    const msgs = records().map((r) => r['msg']);
    assert.deepEqual(msgs, ['listening', 'started', 'shutting down', 'stopped']);
  });

  it('serves healthy endpoints with "ok"', async () => {
    const { options } = testOptions({ start: () => {} });
    const service = await runService(options);
    assert.deepEqual(await get(`${service.url}/healthz`), { status: 200, body: 'ok\n', type: 'text/plain; charset=utf-8' });
    assert.equal((await get(`${service.url}/readyz`)).body, 'ok\n');
    assert.equal((await get(`${service.url}/metrics`)).status, 404);
    await service.shutdown();
  });

  it('keeps closing after a closer fails, and exits 1', async () => {
    const order: string[] = [];
    const { options, exits, records } = testOptions({
      start: () => [
        { name: 'a', close: () => void order.push('a') },
        { name: 'b', close: () => Promise.reject(new Error('drain failed')) },
        { name: 'c', close: () => void order.push('c') },
      ],
    });
    const service = await runService(options);
    assert.equal(await service.shutdown(), 1);
    assert.deepEqual(order, ['c', 'a']);
    assert.deepEqual(exits, [1]);
    const failed = records().find((r) => r['msg'] === 'closer failed');
    assert.equal(failed?.['closer'], 'b');
    assert.equal((failed?.['err'] as Record<string, unknown>)['message'], 'drain failed');
  });

  it('gives up at the deadline, names what was skipped, and exits 1', async () => {
    const order: string[] = [];
    const { options, exits, records } = testOptions({
      shutdownTimeoutMs: 100,
      start: () => [
        { name: 'first', close: () => void order.push('first') },
        { name: 'stuck', close: () => new Promise<void>(() => {}) },
        { name: 'last', close: () => void order.push('last') },
      ],
    });
    const service = await runService(options);
    const t0 = Date.now();
    assert.equal(await service.shutdown(), 1);
    assert.ok(Date.now() - t0 < 5000);
    assert.deepEqual(order, ['last']);
    assert.deepEqual(exits, [1]);
    const r = records().find((x) => x['msg'] === 'shutdown deadline exceeded');
    assert.equal(r?.['closer'], 'stuck');
    assert.deepEqual(r?.['skipped'], ['first']);
  });

  it('when start fails: logs it, runs the closers registered so far, exits 1 and rejects', async () => {
    const order: string[] = [];
    const { options, exits, records } = testOptions({
      start: async ({ onClose }) => {
        onClose({ name: 'bus', close: () => void order.push('bus') });
        throw new Error('cannot reach NATS');
      },
    });
    await assert.rejects(runService(options), /cannot reach NATS/);
    assert.deepEqual(order, ['bus']);
    assert.deepEqual(exits, [1]);
    assert.equal(records().filter((r) => r['level'] === 'error').length, 1, 'logged once');
  });

  it('SIGTERM during start: start sees the abort, closers run, exit 0', async () => {
    const order: string[] = [];
    let startEntered: () => void = () => {};
    const entered = new Promise<void>((r) => (startEntered = r));
    const { options, exits, records } = testOptions({
      handleProcessEvents: true,
      start: async ({ signal, onClose }) => {
        onClose({ name: 'bus', close: () => void order.push('bus') });
        startEntered();
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error)));
      },
    });
    const listenersBefore = process.listenerCount('SIGTERM');
    const running = runService(options);
    await entered;
    assert.equal(process.listenerCount('SIGTERM'), listenersBefore + 1);
    process.emit('SIGTERM', 'SIGTERM');
    const service = await running;
    assert.equal(await service.shutdown(), 0);
    assert.deepEqual(order, ['bus']);
    assert.deepEqual(exits, [0]);
    assert.equal(records().find((r) => r['msg'] === 'shutting down')?.['reason'], 'SIGTERM');
    assert.equal(
      records().some((r) => r['msg'] === 'started'),
      false,
    );
    assert.equal(process.listenerCount('SIGTERM'), listenersBefore, 'process handlers removed');
  });

  it('fails clearly when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { options, exits } = testOptions({ port, start: () => assert.fail('start must not run') });
      await assert.rejects(runService(options), (e) => isServiceError(e, 'ListenFailed') && /127\.0\.0\.1:\d+.*EADDRINUSE/.test((e as Error).message));
      assert.deepEqual(exits, [1]);
    } finally {
      blocker.close();
    }
  });
});

/** Polls `fn` every 5 ms for up to 10 s (a loaded machine can take many event-loop turns to bind a port). */
async function waitFor<T>(fn: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('waitFor: condition never held within 10 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}
