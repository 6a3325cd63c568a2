/**
 * pleg against a real nats-server: the real process (src/main.ts through tsx), a fake cri-adapter
 * `relist` responder served from the test, and the bus contract (events, cache entries, mark, pokes).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  Buckets,
  Consumers,
  Keys,
  PlegMessage,
  RuntimeRelistReply,
  RuntimeRelistRequest,
  Streams,
  Subjects,
  plegEventsOf,
  type PodLifecycleEvent,
  type RuntimePodStatus,
} from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { eventually, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';
import { RuntimeKvValue } from '../src/adapters/kv-runtime-cache.js';
import { container, pod, sandbox, silentLogger } from './fakes.js';

const NODE = 'node-a.example';
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

describe('pleg (integration)', () => {
  let nats: NatsServer;
  let bus: NatsBus;
  let dir: TempDir;
  let proc: SpawnedProcess;
  const ac = new AbortController();
  let runtimePods: RuntimePodStatus[] = [];
  let relists = 0;
  let replyInvalid = false;
  const events: PodLifecycleEvent[] = [];

  before(async () => {
    nats = await startNatsServer();
    dir = await makeTempDir('pleg-it-');
    bus = await connectBus({ servers: nats.url, process: 'test', node: NODE, logger: silentLogger() });
    bus.serve(
      Subjects.rpc.runtime(NODE, 'relist'),
      RuntimeRelistRequest,
      RuntimeRelistReply,
      async (): Promise<RuntimeRelistReply> => {
        relists++;
        if (replyInvalid) return { type: 'kubelet.runtime.RelistReply.v1', pods: [{ uid: 'broken' }], timestamp: Date.now() } as never;
        return { type: 'kubelet.runtime.RelistReply.v1', pods: structuredClone(runtimePods), timestamp: Date.now() };
      },
      { queue: 'cri-adapter', signal: ac.signal },
    );
    await bus.consume(
      PlegMessage,
      { stream: Streams.pleg, durable: `test-${Consumers.syncLoopPleg(NODE)}`, filterSubject: Subjects.plegAll(NODE), signal: ac.signal },
      async (d) => {
        events.push(...plegEventsOf(d.data));
      },
    );
    proc = await spawnProcess({
      cmd: process.execPath,
      args: ['--import', 'tsx', join(repoRoot, 'services/pleg/src/main.ts')],
      cwd: repoRoot,
      name: 'pleg',
      env: {
        NATS_URL: nats.url,
        NODE_NAME: NODE,
        HEALTH_PORT: '0',
        HEALTH_PORT_FILE: join(dir.path, 'pleg.port'),
        // A long period: the test drives relists with pokes.
        RELIST_PERIOD_MS: '60000',
        OTEL_SDK_DISABLED: 'true',
      },
    });
    await proc.waitForLine('pleg started', 20_000);
  });

  after(async () => {
    const code = await proc?.stop();
    ac.abort();
    await bus?.close();
    await nats?.stop();
    await dir?.cleanup();
    assert.equal(code, 0, `pleg exited with ${code}:\n${proc?.tail(30)}`);
  });

  async function runtimeKv() {
    return bus.kv(Buckets.runtime, RuntimeKvValue);
  }

  it('a container that appears running → ContainerStarted, a cache entry and the relist mark', async () => {
    const kv = await runtimeKv();
    const firstMark = await eventually(async () => (await kv.get(Keys.relistMark(NODE)))?.value, { message: 'initial relist mark' });
    assert.equal(firstMark.type, 'kubelet.pleg.RelistMark.v1');

    runtimePods = [pod('uid-1', [container('c-1', 'CONTAINER_RUNNING', 'web')], [sandbox('s-1', true)], ['10.1.0.2'])];
    bus.publishCore(Subjects.plegRelist(NODE));
    await eventually(() => events.some((e) => e.uid === 'uid-1' && e.event === 'ContainerStarted' && e.data === 'c-1'), { message: 'ContainerStarted' });
    const started = events.find((e) => e.data === 'c-1');
    assert.equal(started?.containerName, 'web');
    const entry = (await kv.get(Keys.pod(NODE, 'uid-1')))?.value;
    assert.ok(entry !== undefined && entry !== null && entry.type === 'kubelet.pleg.RuntimeCacheEntry.v1');
    assert.equal(entry.status.containers[0]?.state, 'CONTAINER_RUNNING');
    const mark = (await kv.get(Keys.relistMark(NODE)))?.value;
    assert.ok(mark !== undefined && mark !== null && mark.type === 'kubelet.pleg.RelistMark.v1');
    assert.ok(mark.timestamp >= entry.timestamp && mark.timestamp > firstMark.timestamp);
  });

  it('a poke triggers a relist long before the period', async () => {
    const n = relists;
    const t0 = Date.now();
    bus.publishCore(Subjects.plegRelist(NODE));
    await eventually(() => relists > n, { message: 'a relist after the poke', timeoutMs: 5000 });
    assert.ok(Date.now() - t0 < 5000);
  });

  it('the container exits → ContainerDied; the pod goes away → ContainerRemoved and the entry is deleted', async () => {
    runtimePods = [pod('uid-1', [container('c-1', 'CONTAINER_EXITED', 'web')], [sandbox('s-1', true)], ['10.1.0.2'])];
    bus.publishCore(Subjects.plegRelist(NODE));
    await eventually(() => events.some((e) => e.data === 'c-1' && e.event === 'ContainerDied'), { message: 'ContainerDied' });

    runtimePods = [];
    bus.publishCore(Subjects.plegRelist(NODE));
    await eventually(() => events.some((e) => e.data === 'c-1' && e.event === 'ContainerRemoved'), { message: 'ContainerRemoved' });
    const kv = await runtimeKv();
    await eventually(async () => (await kv.get(Keys.pod(NODE, 'uid-1'))) === null, { message: 'cache entry deleted' });
  });

  it('an invalid relist reply is an error: no mark update, and the next relist works', async () => {
    const kv = await runtimeKv();
    const before = (await kv.get(Keys.relistMark(NODE)))?.value;
    replyInvalid = true;
    const n = relists;
    bus.publishCore(Subjects.plegRelist(NODE));
    await eventually(() => relists > n && proc.lines.some((l) => l.includes('GenericPLEG: Unable to retrieve pods')), { message: 'relist error logged' });
    const same = (await kv.get(Keys.relistMark(NODE)))?.value;
    assert.deepEqual(same, before);
    replyInvalid = false;
    runtimePods = [pod('uid-2', [container('c-2', 'CONTAINER_RUNNING')])];
    bus.publishCore(Subjects.plegRelist(NODE));
    await eventually(() => events.some((e) => e.uid === 'uid-2' && e.event === 'ContainerStarted'), { message: 'recovered' });
  });

  it('serves /healthz ok and the kubelet metrics', async () => {
    const port = (await readFile(join(dir.path, 'pleg.port'), 'utf8')).trim();
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(health.status, 200);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const name of ['kubelet_pleg_relist_duration_seconds', 'kubelet_pleg_relist_interval_seconds', 'kubelet_pleg_last_seen_seconds', 'kubelet_pleg_discard_events']) {
      assert.ok(metrics.includes(name), `${name} in /metrics`);
    }
  });
});
