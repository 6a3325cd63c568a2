/**
 * Issue 4: a process flushes its spans when terminated. A real pleg process (dist/main.js) against
 * a real nats-server and the in-test OTLP receiver, with the BatchSpanProcessor's schedule delay at
 * 60 s, so nothing reaches the receiver unless shutdown flushes it. The test plays cri-adapter's
 * `relist` endpoint and holds the reply of a poked relist until pleg got SIGTERM: the `relist` span
 * then ends during the shutdown drain, and must still reach both sinks before the process exits —
 * the OTLP receiver, and `SL_SPANS` on the bus (published and acknowledged while the bus is still
 * connected: no span-sink error in pleg's log).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { headers } from '@nats-io/transport-node';
import { RuntimeRelistReply, RuntimeRelistRequest, Subjects, type SpanRecord } from '@splitlet/api';
import type { RuntimePodStatus } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { createLogger } from '@splitlet/telemetry';
import { eventually, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';
import { repoRoot } from './harness.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts';

const MAIN = join(repoRoot, 'services', 'pleg', 'dist', 'main.js');
const NODE = 'flush-node';
/** The trace of the poke: as if a cri-adapter call asked for the relist. */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const POKE_SPAN = '00f067aa0ba902b7';

function runningPod(uid: string): RuntimePodStatus {
  return {
    uid,
    name: 'web',
    namespace: 'default',
    ips: ['10.88.0.9'],
    sandboxes: [{ id: `sb-${uid}`, state: 'SANDBOX_READY', createdAt: Date.now(), attempt: 0 }],
    containers: [
      {
        id: `c-${uid}`,
        name: 'app',
        sandboxId: `sb-${uid}`,
        state: 'CONTAINER_RUNNING',
        createdAt: Date.now(),
        startedAt: Date.now(),
        image: 'busybox',
        imageRef: 'sha256:1',
        hash: 'h',
        restartCount: 0,
      },
    ],
  };
}

describe('span flush on SIGTERM', { skip: existsSync(MAIN) ? false : `${MAIN} missing: run npx tsc -b` }, () => {
  let nats: NatsServer;
  let rx: OtlpReceiver;
  let dir: TempDir;
  let bus: NatsBus;
  let proc: SpawnedProcess | undefined;
  const stop = new AbortController();

  before(async () => {
    nats = await startNatsServer();
    rx = await startOtlpReceiver();
    dir = await makeTempDir('span-flush-');
    bus = await connectBus({ servers: nats.url, process: 'cri-adapter', node: NODE, logger: createLogger({ service: 'test', level: 'error' }) });
  });

  after(async () => {
    stop.abort();
    if (proc !== undefined && proc.status() === undefined) await proc.kill();
    await bus?.close();
    await rx?.close();
    await nats?.stop();
    await dir?.cleanup();
  });

  test('pleg exports to OTLP and publishes to SL_SPANS a span that ends during its shutdown, before it exits', async (tc) => {
    // cri-adapter's relist endpoint: empty at first; the poked relist's reply is held.
    let requests = 0;
    let hold: { release: (pods: RuntimePodStatus[]) => void } | undefined;
    let arrived: (() => void) | undefined;
    const heldArrived = new Promise<void>((resolve) => (arrived = resolve));
    let holding = false;
    bus.serve(
      Subjects.rpc.runtime(NODE, 'relist'),
      RuntimeRelistRequest,
      RuntimeRelistReply,
      async (): Promise<RuntimeRelistReply> => {
        requests++;
        if (!holding) return { type: 'kubelet.runtime.RelistReply.v1', pods: [], timestamp: Date.now() };
        const pods = await new Promise<RuntimePodStatus[]>((resolve) => {
          hold = { release: resolve };
          arrived?.();
        });
        return { type: 'kubelet.runtime.RelistReply.v1', pods, timestamp: Date.now() };
      },
      { queue: 'cri-adapter', signal: stop.signal },
    );

    proc = await spawnProcess({
      cmd: process.execPath,
      args: [MAIN],
      name: 'pleg',
      env: {
        NATS_URL: nats.url,
        NODE_NAME: NODE,
        HEALTH_PORT: '0',
        HEALTH_PORT_FILE: join(dir.path, 'pleg.port'),
        LOG_LEVEL: 'debug',
        // Only the first relist and the poked one.
        RELIST_PERIOD_MS: '600000',
        OTEL_EXPORTER_OTLP_ENDPOINT: rx.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '60000',
        OTEL_SDK_DISABLED: undefined,
        OTEL_TRACES_EXPORTER: undefined,
      },
    });
    await proc.waitForLine('pleg started', 20_000);
    await eventually(() => (requests >= 1 ? true : undefined));

    // A traced poke (cri-adapter's, after a runtime change): its relist is held.
    holding = true;
    const h = headers();
    h.set('traceparent', `00-${TRACE_ID}-${POKE_SPAN}-01`);
    bus.nc.publish(Subjects.plegRelist(NODE), '{}', { headers: h });
    await heldArrived;
    // Give a batch a chance to go out if the schedule delay were not honoured.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(rx.requests, 0, 'nothing exported before shutdown (60 s schedule delay)');

    const shutdownLine = proc.lines.length;
    const sigtermAt = BigInt(Date.now()) * 1_000_000n;
    const exit = proc.stop('SIGTERM', 15_000);
    let atExit: ReceivedSpan[] = [];
    void proc.exited.then(() => {
      atExit = [...rx.spans];
    });
    await proc.waitForLine('shutting down', 5_000, shutdownLine);
    // pleg is draining (waiting for its relist): the runtime answers now.
    hold!.release([runningPod('uid-flush')]);
    assert.equal(await exit, 0, `pleg exits 0 on SIGTERM:\n${proc.tail(30)}`);

    // OTLP: the relist (ended after SIGTERM) and its children arrived before the process exited.
    const ours = atExit.filter((s) => s.traceId === TRACE_ID);
    const relist = ours.find((s) => s.name === 'relist');
    assert.ok(relist, `the relist span reached the OTLP receiver before pleg exited; got: ${atExit.map((s) => s.name).join(', ')}`);
    assert.equal(relist.parentSpanId, POKE_SPAN, "in the poke's trace");
    assert.equal(relist.service, 'pleg');
    assert.ok(relist.endUnixNano > sigtermAt, 'the relist ended during the shutdown');
    // Its request to the runtime, and the lifecycle events (sandbox and container started) it published.
    const names = new Set(ours.filter((s) => s.parentSpanId === relist.spanId).map((s) => s.name));
    assert.deepEqual([...names].sort(), ['send sl.{node}.pleg.{uid}', 'send sl.{node}.rpc.runtime.relist']);

    // SL_SPANS: the same spans, published while pleg's bus was still connected.
    const records: SpanRecord[] = [];
    await bus.readSpans(Subjects.spans(NODE, TRACE_ID), (r) => records.push(r));
    assert.deepEqual(records.map((r) => r.spanId).sort(), ours.map((s) => s.spanId).sort(), 'SL_SPANS holds every span the OTLP receiver got');
    const errors = proc.lines.slice(shutdownLine).filter((l) => /telemetry error|closer failed|deadline/.test(l));
    assert.deepEqual(errors, [], 'no span-sink or export error while shutting down');
    tc.diagnostic(`${ours.length} spans of the poked relist flushed on SIGTERM, relist ended ${(relist.endUnixNano - sigtermAt) / 1_000_000n} ms after SIGTERM`);
  });
});
