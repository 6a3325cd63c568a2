/**
 * The evented PLEG against the real thing: a nats-server, the sim-runtime process (GetContainerEvents
 * over its CRI socket), the cri-adapter process and the pleg process, each its own OS process; the
 * test plays the pod-worker (syncPod requests) and reads what pleg publishes and caches.
 *
 * - the runtime's events drive pleg: a container that exits on its own is reported (ContainerDied,
 *   the cache entry updated) without any relist in the meantime and without a relist poke;
 * - the follow-up sync does not wait: the cache entry is newer than the syncPod reply at once;
 * - the runtime restarted (its event stream broke): pleg relists every second again, and once
 *   the runtime is back and cri-adapter subscribed again, pleg catches up with a full relist and
 *   goes back to the long period.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  Buckets,
  Keys,
  PlegMessage,
  RelistMark,
  RuntimeCacheEntry,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
  Streams,
  Subjects,
  plegEventsOf,
  type BoundPod,
  type PodLifecycleEvent,
} from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { aPod } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';

const NODE = 'evented-node';
const root = fileURLToPath(new URL('../../', import.meta.url));
const main = (svc: string): string => join(root, 'services', svc, 'dist', 'main.js');
const quiet = createLogger({ service: 'test', level: 'error' });

describe('evented PLEG: sim-runtime → cri-adapter → pleg over a real nats-server', () => {
  let nats: NatsServer;
  let dir: TempDir;
  let bus: NatsBus;
  let sim: SpawnedProcess;
  let cri: SpawnedProcess;
  let pleg: SpawnedProcess;
  const ac = new AbortController();
  const events: PodLifecycleEvent[] = [];
  let pokes = 0;
  let socket: string;

  const startSim = (): Promise<SpawnedProcess> =>
    spawnProcess({ cmd: process.execPath, args: [main('sim-runtime')], name: 'sim-runtime', env: { SIM_SOCKET: socket, HEALTH_PORT: '0', LOG_LEVEL: 'info' } });

  before(async () => {
    nats = await startNatsServer();
    dir = await makeTempDir('evented-pleg-');
    socket = join(dir.path, 'sim.sock');
    sim = await startSim();
    await sim.waitForLine('serving CRI', 30_000);
    const common = { NATS_URL: nats.url, NODE_NAME: NODE, HEALTH_PORT: '0', OTEL_SDK_DISABLED: 'true', LOG_LEVEL: 'info' };
    cri = await spawnProcess({
      cmd: process.execPath,
      args: [main('cri-adapter')],
      name: 'cri-adapter',
      env: { ...common, CRI_ENDPOINT: `unix://${socket}`, POD_LOG_DIR: join(dir.path, 'pods'), ROOT_DIR: join(dir.path, 'kubelet'), RESOLV_CONF: '' },
    });
    await cri.waitForLine('cri-adapter serving', 30_000);
    pleg = await spawnProcess({ cmd: process.execPath, args: [main('pleg')], name: 'pleg', env: { ...common, HEALTH_PORT_FILE: join(dir.path, 'pleg.port') } });
    await pleg.waitForLine('pleg started', 30_000);
    bus = await connectBus({ servers: nats.url, process: 'test', node: NODE, logger: quiet });
    bus.subscribeCore(Subjects.plegRelist(NODE), () => pokes++, ac.signal);
    await bus.consume(PlegMessage, { stream: Streams.pleg, durable: 'evented-test', filterSubject: Subjects.plegAll(NODE), signal: ac.signal }, async (d) => {
      events.push(...plegEventsOf(d.data));
    });
    await bus.flush();
  });

  after(async () => {
    ac.abort();
    const codes = { pleg: await pleg?.stop('SIGTERM', 15_000), cri: await cri?.stop('SIGTERM', 15_000), sim: await sim?.stop('SIGTERM', 15_000) };
    await bus?.close();
    await nats?.stop();
    rmSync(socket ?? '', { force: true });
    await dir?.cleanup();
    assert.deepEqual(codes, { pleg: 0, cri: 0, sim: 0 }, `${pleg?.tail(20)}\n${cri?.tail(20)}`);
  });

  /** pleg's /metrics as name{labels} → value. */
  async function plegMetrics(): Promise<Map<string, number>> {
    const port = (await readFile(join(dir.path, 'pleg.port'), 'utf8')).trim();
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const out = new Map<string, number>();
    for (const line of text.split('\n')) {
      const m = /^([a-z_]+)(?:\{[^}]*\})? ([-0-9.e+]+)$/.exec(line);
      if (m !== null) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2])); // series of one name summed
    }
    return out;
  }
  /** Relists pleg started (its relist duration histogram counts every one). */
  const relists = async (): Promise<number> => (await plegMetrics()).get('kubelet_pleg_relist_duration_seconds_count') ?? NaN;
  const evented = async (): Promise<boolean> => (await plegMetrics()).get('splitlet_pleg_evented') === 1;

  async function syncPod(pod: BoundPod): Promise<RuntimeSyncPodReply> {
    return bus.request(
      RuntimeSyncPodRequest,
      RuntimeSyncPodReply,
      Subjects.rpc.runtime(NODE, 'syncPod'),
      {
        type: 'kubelet.runtime.SyncPodRequest.v1',
        pod,
        podStatus: { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace, ips: [], sandboxes: [], containers: [] },
        volumes: {},
        pullSecrets: [],
        fence: { partition: 0, epoch: 1 },
      },
      { timeoutMs: 60_000 },
    );
  }

  const runtimeKv = () => bus.kv(Buckets.runtime, RuntimeCacheEntry.or(RelistMark));
  /** The global cache time (RelistMark). */
  async function mark(): Promise<number> {
    const v = (await (await runtimeKv()).get(Keys.relistMark(NODE)))?.value;
    return v?.type === 'kubelet.pleg.RelistMark.v1' ? v.timestamp : 0;
  }

  async function cacheEntry(uid: string): Promise<RuntimeCacheEntry | undefined> {
    const e = await (await runtimeKv()).get(Keys.pod(NODE, uid));
    return e?.value?.type === 'kubelet.pleg.RuntimeCacheEntry.v1' ? e.value : undefined;
  }

  it("a container that exits on its own is reported from the runtime's events: no relist, no poke", async () => {
    await eventually(evented, { message: 'pleg driven by the runtime events', timeoutMs: 60_000 });
    const relistsBefore = await relists();
    const pod = aPod({
      metadata: { name: 'quick', uid: 'uid-quick' },
      spec: { restartPolicy: 'Never', containers: [{ name: 'job', image: 'busybox:1.36', command: ['sh', '-c', 'sleep 2; exit 3'] }] },
    });
    const reply = await syncPod(pod);
    assert.deepEqual(
      reply.results.filter((r) => r.error !== undefined),
      [],
    );
    // The follow-up sync does not wait for a relist: an entry newer than the reply comes with the operation.
    const repliedAt = reply.timestamp;
    assert.ok(repliedAt !== undefined, 'the syncPod reply carries its timestamp');
    const fresh = await eventually(
      async () => {
        const e = await cacheEntry('uid-quick');
        return e !== undefined && e.timestamp > repliedAt ? e : undefined;
      },
      { message: 'a cache entry newer than the syncPod reply', timeoutMs: 30_000 },
    );
    assert.equal(fresh.status.containers.find((c) => c.name === 'job')?.state, 'CONTAINER_RUNNING');
    const jobId = fresh.status.containers.find((c) => c.name === 'job')!.id;
    await eventually(() => events.some((e) => e.uid === 'uid-quick' && e.event === 'ContainerStarted' && e.data === jobId), { message: 'ContainerStarted', timeoutMs: 30_000 });
    // The container exits on its own 2 s later.
    await eventually(() => events.some((e) => e.uid === 'uid-quick' && e.event === 'ContainerDied' && e.data === jobId), { message: 'ContainerDied', timeoutMs: 30_000 });
    const died = await eventually(
      async () => {
        const e = await cacheEntry('uid-quick');
        const c = e?.status.containers.find((x) => x.id === jobId);
        return c?.state === 'CONTAINER_EXITED' ? c : undefined;
      },
      { message: 'the cache entry shows the exit', timeoutMs: 30_000 },
    );
    assert.equal(died.exitCode, 3);
    assert.equal(died.reason, 'Error');
    // Each event names the sl_runtime write it came from (sync-loop pokes once per write): the
    // start's and the exit's are two writes, neither newer than the entry now.
    const revisionOf = (event: string): number | undefined => events.find((e) => e.uid === 'uid-quick' && e.event === event && e.data === jobId)?.cacheRevision;
    const [started, exited] = [revisionOf('ContainerStarted'), revisionOf('ContainerDied')];
    const now = (await (await runtimeKv()).get(Keys.pod(NODE, 'uid-quick')))?.revision ?? 0;
    assert.ok(started !== undefined && exited !== undefined && started < exited && exited <= now, `revisions: started ${started}, exited ${exited}, entry ${now}`);
    assert.equal(await relists(), relistsBefore, 'no relist ran meanwhile');
    assert.equal(pokes, 0, 'cri-adapter poked nobody: the events covered its changes');
    // The global cache time moves with the stream's heartbeat.
    const m0 = await mark();
    await eventually(async () => (await mark()) > m0, { message: 'the relist mark moves without relists', timeoutMs: 30_000 });
    assert.equal(await relists(), relistsBefore);
  });

  it('the runtime restarts: pleg relists every second while the stream is down, then catches up and goes back to events', async () => {
    const down = await relists();
    await sim.kill(); // SIGKILL: the event stream breaks with the runtime
    await eventually(async () => !(await evented()), { message: 'pleg falls back to relisting', timeoutMs: 30_000 });
    // Relisting every second (the relists fail while the runtime is gone, and are counted all the same).
    await eventually(async () => (await relists()) >= down + 3, { message: 'relists every period', timeoutMs: 30_000 });
    sim = await startSim();
    await sim.waitForLine('serving CRI', 30_000);
    await cri.waitForLine("subscribed to the runtime's container events again", 60_000);
    await eventually(evented, { message: 'events drive pleg again', timeoutMs: 60_000 });
    // The restarted runtime has no containers: the catch-up relist found the pod gone.
    await eventually(async () => (await cacheEntry('uid-quick')) === undefined, { message: 'the gone pod leaves the cache', timeoutMs: 30_000 });
    assert.ok(events.some((e) => e.uid === 'uid-quick' && e.event === 'ContainerRemoved'));
    // Back to the long period: while the heartbeat moves the cache time on (3 s, ~3 heartbeats), no relist.
    const settled = await relists();
    const m0 = await mark();
    await eventually(async () => (await mark()) >= m0 + 3000, { message: 'three seconds of heartbeats', timeoutMs: 60_000 });
    assert.equal(await relists(), settled, 'no relist once the events drive pleg again');
    const m = await plegMetrics();
    assert.ok((m.get('splitlet_pleg_event_stream_resyncs_total') ?? 0) >= 2);
  });
});
