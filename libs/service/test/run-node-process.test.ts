/**
 * The process bootstrap's one config-error path (exit 2, one stderr line naming every bad variable,
 * nothing started) and its happy path without a bus (`runProcess`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter } from 'prom-client';
import { z } from 'zod';
import { NodeProcessEnv, ProcessEnv, runNodeProcess, runProcess } from '../src/index.js';

const NodeSchema = z.object({ ...NodeProcessEnv, RELIST_PERIOD_MS: z.coerce.number().int().positive().default(1000) });

/** Records what the bootstrap did instead of ending the test process. */
function seams() {
  const exits: number[] = [];
  const lines: string[] = [];
  return { exits, lines, exit: (code: number) => void exits.push(code), stderr: (line: string) => void lines.push(line) };
}

describe('runNodeProcess: configuration errors', () => {
  it('exits 2 with one stderr line naming every bad variable, never a value, and starts nothing', async () => {
    const s = seams();
    let started = false;
    const result = await runNodeProcess({
      service: 'pleg',
      schema: NodeSchema,
      env: { NODE_NAME: 'Secret_Node', RELIST_PERIOD_MS: '-5', OTEL_SDK_DISABLED: 'true' },
      exit: s.exit,
      stderr: s.stderr,
      handleProcessEvents: false,
      start: () => {
        started = true;
      },
    });
    assert.equal(result, undefined);
    assert.deepEqual(s.exits, [2]);
    assert.equal(s.lines.length, 1);
    assert.equal(
      s.lines[0],
      'pleg: invalid configuration: NATS_URL: is required but not set; NODE_NAME: must be a lowercase DNS-1123 subdomain; RELIST_PERIOD_MS: Too small: expected number to be >0\n',
    );
    assert.doesNotMatch(s.lines[0] ?? '', /Secret_Node|-5/);
    assert.equal(started, false);
  });

  it('an invalid OTEL_* variable takes the same path', async () => {
    const s = seams();
    const result = await runNodeProcess({
      service: 'status-manager',
      schema: NodeSchema,
      env: { NATS_URL: 'nats://127.0.0.1:4222', NODE_NAME: 'n1', OTEL_TRACES_SAMPLER: 'sometimes' },
      exit: s.exit,
      stderr: s.stderr,
      handleProcessEvents: false,
      start: () => assert.fail('start must not run'),
    });
    assert.equal(result, undefined);
    assert.deepEqual(s.exits, [2]);
    assert.equal(s.lines.length, 1);
    assert.match(s.lines[0] ?? '', /^status-manager: .*OTEL_TRACES_SAMPLER: 'sometimes' is not supported/);
  });

  it('an error that is not about configuration is not swallowed', async () => {
    const s = seams();
    const Throwing = z.object({ ...ProcessEnv }).transform(() => {
      throw new Error('schema bug');
    });
    await assert.rejects(runProcess({ service: 'x', schema: Throwing, env: {}, exit: s.exit, stderr: s.stderr, handleProcessEvents: false, start: () => undefined }), /schema bug/);
    assert.deepEqual(s.exits, []);
  });
});

describe('runProcess', () => {
  it('hands start the parsed config, registry, telemetry and instance; shutdown runs the closers and exits 0', async () => {
    const s = seams();
    const closed: string[] = [];
    const running = await runProcess({
      service: 'sim-runtime',
      schema: z.object({ ...ProcessEnv, SIM_SOCKET: z.string().min(1) }),
      // An invalid OTEL_* value is not even read when the process is not traced.
      env: { SIM_SOCKET: '/run/sim.sock', LOG_LEVEL: 'error', HEALTH_PORT: '0', OTEL_TRACES_SAMPLER: 'sometimes' },
      traced: false,
      exit: s.exit,
      stderr: s.stderr,
      handleProcessEvents: false,
      instanceId: (c) => `sim-${c.SIM_SOCKET.length}`,
      start: ({ config, registry, telemetry, instanceId, onClose }) => {
        assert.equal(config.SIM_SOCKET, '/run/sim.sock');
        assert.equal(config.HEALTH_HOST, '127.0.0.1');
        assert.equal(instanceId, 'sim-13');
        assert.equal(telemetry.settings.disabled, true);
        new Counter({ name: 'bootstrap_test_total', help: 'a metric of the service', registers: [registry] }).inc();
        onClose({ name: 'component', close: () => void closed.push('component') });
      },
    });
    assert.ok(running);
    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    assert.match(metrics, /bootstrap_test_total/);
    assert.equal((await fetch(`${running.url}/readyz`)).status, 200);
    assert.equal(await running.shutdown('test'), 0);
    assert.deepEqual(closed, ['component']);
    assert.deepEqual(s.exits, [0]);
    assert.deepEqual(s.lines, []);
  });
});
