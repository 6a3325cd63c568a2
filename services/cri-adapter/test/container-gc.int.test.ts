/**
 * Integration: `sl.<node>.rpc.runtime.garbageCollect` served by the cri-adapter over a real
 * nats-server, with the CRI simulator behind a real gRPC socket, after real SyncPod/KillPod calls:
 * a crash-looping pod's older dead containers and their logs go, a deleted pod's containers,
 * sandbox and log directory go, and a malformed request is refused with a clear error.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { trace } from '@opentelemetry/api';
import {
  RuntimeGarbageCollectReply,
  RuntimeGarbageCollectRequest,
  RuntimeKillPodReply,
  RuntimeKillPodRequest,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
  Subjects,
  type BoundPod,
  type ContainerGCPolicy,
} from '@splitlet/api';
import { connectBus, isBusError, type NatsBus } from '@splitlet/bus';
import { GrpcRuntimeService, instrument } from '@splitlet/cri';
import { startSimCri, type SimCri } from '@splitlet/cri/testing';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, makeTempDir, startNatsServer, type NatsServer, type TempDir } from '@splitlet/testkit';
import { createCriAdapter, isMutatingCriMethod, type CriAdapter } from '../src/create-cri-adapter.js';
import { noopKubeRuntimeMetrics } from '../src/kuberuntime/metrics.js';
import { aPod } from './fixtures.js';

const NODE = 'gc-node.example';
const logger = createLogger({ service: 'cri-adapter-test', level: 'error' });
const KUBELET_POLICY: ContainerGCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

describe('cri-adapter garbageCollect over NATS and the CRI simulator', () => {
  let nats: NatsServer;
  let sim: SimCri;
  let logs: TempDir;
  let bus: NatsBus;
  let caller: NatsBus;
  let client: GrpcRuntimeService;
  let adapter: CriAdapter;
  let clock: FakeClock;
  const stop = new AbortController();
  let pokes = 0;

  before(async () => {
    nats = await startNatsServer();
    sim = await startSimCri();
    logs = await makeTempDir('cri-adapter-gc-');
    bus = await connectBus({ servers: nats.url, process: 'cri-adapter', node: NODE, logger });
    caller = await connectBus({ servers: nats.url, process: 'sync-loop', node: NODE, logger, provision: false });
    caller.subscribeCore(Subjects.plegRelist(NODE), () => pokes++, stop.signal);
    await caller.nc.flush();
    client = await GrpcRuntimeService.connect({ endpoint: sim.endpoint });
    let mutations = 0;
    const cri = instrument(client, { tracer: trace.getTracer('test'), onCall: (r) => (isMutatingCriMethod(r.method) ? mutations++ : undefined) });
    clock = new FakeClock(Date.now());
    adapter = await createCriAdapter({
      settings: {
        NODE_NAME: NODE,
        RUNTIME_REQUEST_TIMEOUT_MS: 30_000,
        POD_LOG_DIR: logs.path,
        SANDBOX_IMAGE: 'registry.k8s.io/pause:3.9',
        SERIALIZE_IMAGE_PULLS: true,
        CLUSTER_DNS: [],
        CLUSTER_DOMAIN: '',
        RESOLV_CONF: '',
      },
      bus,
      cri,
      mutations: () => mutations,
      clock,
      logger,
      tracer: trace.getTracer('test'),
      metrics: noopKubeRuntimeMetrics,
      signal: stop.signal,
    });
  });

  after(async () => {
    stop.abort();
    await adapter?.done;
    await adapter?.flush();
    await caller?.close();
    await bus?.close();
    client?.close();
    await sim?.close();
    await nats?.stop();
    await logs?.cleanup();
  });

  const fence = { partition: 0, epoch: 1 };
  const syncPod = (pod: BoundPod): Promise<RuntimeSyncPodReply> =>
    caller.request(
      RuntimeSyncPodRequest,
      RuntimeSyncPodReply,
      Subjects.rpc.runtime(NODE, 'syncPod'),
      { type: 'kubelet.runtime.SyncPodRequest.v1', pod, podStatus: { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace, ips: [], sandboxes: [], containers: [] }, volumes: {}, pullSecrets: [], fence },
      { timeoutMs: 30_000 },
    );
  const killPod = (pod: BoundPod): Promise<RuntimeKillPodReply> =>
    caller.request(
      RuntimeKillPodRequest,
      RuntimeKillPodReply,
      Subjects.rpc.runtime(NODE, 'killPod'),
      { type: 'kubelet.runtime.KillPodRequest.v1', pod, runningPod: { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace }, gracePeriodOverride: 0, fence },
      { timeoutMs: 30_000 },
    );
  const garbageCollect = (keep: string[], policy: ContainerGCPolicy = KUBELET_POLICY): Promise<RuntimeGarbageCollectReply> =>
    caller.request(
      RuntimeGarbageCollectRequest,
      RuntimeGarbageCollectReply,
      Subjects.rpc.runtime(NODE, 'garbageCollect'),
      { type: 'kubelet.runtime.GarbageCollectRequest.v1', policy, allSourcesReady: true, keep },
      { timeoutMs: 30_000 },
    );
  const attempts = async (uid: string): Promise<Array<[number, string]>> =>
    (await client.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid } } })).containers.map((c) => [c.metadata?.attempt ?? -1, c.state] as [number, string]).sort((a, b) => a[0] - b[0]);

  const crasher = aPod({ name: 'crasher', uid: 'uid-crasher', containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', 'echo crashed; exit 1'] }] });

  it("a crash-looping pod's older dead containers and their log files go; the newest stays", async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await syncPod(crasher);
      assert.deepEqual(r.results.filter((x) => x.error !== undefined), [], `sync ${attempt}`);
      await eventually(async () => (await attempts('uid-crasher')).some(([a, s]) => a === attempt && s === 'CONTAINER_EXITED'), { message: `attempt ${attempt} exits` });
      clock.advance(600_000); // past the crash-loop back-off
    }
    assert.deepEqual(await attempts('uid-crasher'), [[0, 'CONTAINER_EXITED'], [1, 'CONTAINER_EXITED'], [2, 'CONTAINER_EXITED']]);
    const pokesBefore = pokes;
    const reply = await garbageCollect(['uid-crasher']);
    assert.deepEqual(reply, { type: 'kubelet.runtime.GarbageCollectReply.v1', removedContainers: 2, removedSandboxes: 0, removedLogDirs: 0 });
    assert.deepEqual(await attempts('uid-crasher'), [[2, 'CONTAINER_EXITED']]);
    assert.deepEqual(await readdir(join(logs.path, 'default_crasher_uid-crasher', 'main')), ['2.log']);
    await eventually(() => pokes > pokesBefore, { message: 'pleg is asked to relist' });
    // The next SyncPod restarts from the kept container: restart count 3.
    await syncPod(crasher);
    assert.deepEqual((await attempts('uid-crasher')).map(([a]) => a), [2, 3]);
  });

  it("a deleted pod's containers, sandbox and log directory go once it is no longer kept", async () => {
    await killPod(crasher);
    const kept = await garbageCollect(['uid-crasher']);
    assert.deepEqual([kept.removedContainers, kept.removedSandboxes, kept.removedLogDirs], [1, 0, 0], 'a kept pod keeps its newest dead container and its only sandbox');
    const reply = await garbageCollect([]);
    assert.deepEqual(reply, { type: 'kubelet.runtime.GarbageCollectReply.v1', removedContainers: 1, removedSandboxes: 1, removedLogDirs: 1 });
    assert.deepEqual(await attempts('uid-crasher'), []);
    assert.deepEqual((await client.ListPodSandbox({ filter: { labelSelector: { 'io.kubernetes.pod.uid': 'uid-crasher' } } })).items, []);
    assert.equal(existsSync(join(logs.path, 'default_crasher_uid-crasher')), false);
  });

  it('a negative MinAge is refused at both ends with the reason, and the adapter keeps serving', async () => {
    const bad = { type: 'kubelet.runtime.GarbageCollectRequest.v1', policy: { minAgeMs: -1, maxPerPodContainer: 1, maxContainers: -1 }, allSourcesReady: true, keep: [] };
    // The sender validates first…
    await assert.rejects(garbageCollect([], bad.policy), (e: unknown) => isBusError(e) && e.code === 'SchemaInvalid' && /invalid minimum garbage collection age/.test(e.message));
    // …and the adapter refuses what got past a sender that did not.
    const raw = await caller.nc.request(Subjects.rpc.runtime(NODE, 'garbageCollect'), JSON.stringify(bad), { timeout: 5000 });
    const env = raw.json<{ ok: boolean; error?: { code: string; message: string } }>();
    assert.equal(env.ok, false);
    assert.equal(env.error?.code, 'SchemaInvalid');
    assert.match(env.error?.message ?? '', /policy\.minAgeMs.*invalid minimum garbage collection age/);
    assert.equal((await garbageCollect([])).error, undefined);
  });
});
