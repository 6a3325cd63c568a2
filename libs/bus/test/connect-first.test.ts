/**
 * The first connection: connectBus waits for a NATS that is not up yet, warns without leaking
 * credentials, and gives up at once when its signal aborts (a shutdown while NATS is unreachable).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, startNatsServer } from '@splitlet/testkit';
import { connectBus } from '../src/index.ts';

function recordingLogger(): {
  lines: { msg: string; fields?: Record<string, unknown> }[];
  debug(): void;
  info(): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(): void;
} {
  const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
  return {
    lines,
    debug() {},
    info() {},
    warn(msg, fields) {
      lines.push(fields === undefined ? { msg } : { msg, fields });
    },
    error() {},
  };
}

describe('connectBus first connection', () => {
  test('an abort while NATS is unreachable ends the wait at once, with the abort reason', async () => {
    const port = await freePort();
    const logger = recordingLogger();
    const controller = new AbortController();
    const started = performance.now();
    const pending = connectBus({ servers: `nats://user:hunter2@127.0.0.1:${port}`, process: 'test', node: 'n1', logger, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('SIGTERM')), 700);
    await assert.rejects(pending, /SIGTERM/);
    const took = performance.now() - started;
    assert.ok(took < 5000, `connectBus took ${took.toFixed(0)} ms to notice the abort`);
    assert.equal(logger.lines[0]?.msg, 'NATS not reachable yet');
    assert.deepEqual(logger.lines[0]?.fields?.['servers'], [`nats://127.0.0.1:${port}`]);
    assert.ok(!JSON.stringify(logger.lines).includes('hunter2'), 'the password must not be logged');
  });

  test('an already aborted signal rejects without connecting', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopped before start'));
    await assert.rejects(connectBus({ servers: 'nats://127.0.0.1:1', process: 'test', node: 'n1', logger: recordingLogger(), signal: controller.signal }), /stopped before start/);
  });

  test('NATS coming up later is connected to and provisioned', async () => {
    const port = await freePort();
    const logger = recordingLogger();
    const controller = new AbortController();
    const pending = connectBus({ servers: `nats://127.0.0.1:${port}`, process: 'test', node: 'n1', logger, signal: controller.signal });
    await new Promise((r) => setTimeout(r, 600));
    const server = await startNatsServer({ port });
    try {
      const bus = await pending;
      assert.ok(logger.lines.length >= 1, 'the unreachable start was warned about');
      assert.match(bus.serverVersion, /^\d+\.\d+\.\d+/);
      await bus.close();
    } finally {
      await server.stop();
    }
  });

  test('failFast with several servers: the first down, the next answers (a cluster with one server gone)', async () => {
    const dead = await freePort();
    const server = await startNatsServer();
    try {
      const bus = await connectBus({
        servers: [`nats://127.0.0.1:${dead}`, server.url],
        process: 'test',
        node: 'n1',
        logger: recordingLogger(),
        provision: false,
        failFast: true,
        connectTimeoutMs: 3000,
      });
      assert.match(bus.serverVersion, /^\d+\.\d+\.\d+/);
      await bus.close();
    } finally {
      await server.stop();
    }
    await assert.rejects(
      connectBus({
        servers: [`nats://127.0.0.1:${dead}`, `nats://u:secret@127.0.0.1:${dead}`],
        process: 'test',
        node: 'n1',
        logger: recordingLogger(),
        provision: false,
        failFast: true,
        connectTimeoutMs: 3000,
      }),
      (e: Error) => e.message.includes(`127.0.0.1:${dead}`) && !e.message.includes('secret'),
    );
  });
});
