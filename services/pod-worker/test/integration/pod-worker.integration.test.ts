/**
 * pod-worker against a real nats-server: two instances in one process (one bus connection each),
 * fake cri-adapter / volume-manager responders on the bus that fail on per-pod overlap, 200 pods
 * created in a burst and then removed, a poison poke dead-lettered, and an instance that leaves
 * (abandon: its leases left to expire) taken over by the other. A real crash (SIGKILL) and a
 * paused owner (SIGSTOP) of real processes are in pod-worker.process.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trace } from '@opentelemetry/api';
import { Buckets, DeadLetter, Keys, Subjects, WorkerRecord, KillRequest, partitionOf, nodeToken } from '@splitlet/api';
import { connectBus } from '@splitlet/bus';
import type { NatsBus } from '@splitlet/bus';
import { realClock } from '@splitlet/service';
import { eventually, startNatsServer } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { startPodWorkerInstance } from '../../src/instance.js';
import type { InstanceSettings, PodWorkerInstance } from '../../src/instance.js';
import { createLogger } from '@splitlet/telemetry';
import { silentLog } from '../fakes.js';
import { CallLedger, FakeSyncLoop, StatusLog, runFakePleg, serveFakeNodeServices, testPod } from './bus-fakes.js';

const NODE = 'node-1.example';
const P = 8;

const settings = (instanceId: string): InstanceSettings => ({
  node: NODE,
  instanceId,
  partitions: P,
  leaseRenewMs: 3000,
  memberHeartbeatMs: 1000,
  balanceIntervalMs: 200,
  volumeTimeoutMs: 10_000,
  runtimeSyncTimeoutMs: 10_000,
  runtimeCacheWaitMs: 2000,
  drainTimeoutMs: 5000,
  runtimeName: 'containerd',
  maxConcurrentSyncs: 64,
  allowPrivileged: false,
});

describe('pod-worker on a real nats-server', () => {
  let server: NatsServer;
  let driver: NatsBus;
  const buses: NatsBus[] = [];
  const instances: PodWorkerInstance[] = [];
  const ac = new AbortController();
  const ledger = new CallLedger();
  /** Sync start/end across both instances: overlaps by uid, and which instance synced which uid. */
  const active = new Map<string, string>();
  const syncOverlaps: string[] = [];
  const syncedBy = new Map<string, Set<string>>();
  /** Syncs ended per uid. */
  const syncEnds = new Map<string, number>();
  let statuses: StatusLog;
  let loop: FakeSyncLoop;
  let stopPleg: () => void = () => undefined;

  const onSyncEvent = (uid: string, e: 'start' | 'end', instance: string): void => {
    if (e === 'start') {
      const other = active.get(uid);
      if (other !== undefined) syncOverlaps.push(`${uid}: ${instance} started while ${other} was syncing`);
      active.set(uid, instance);
      const s = syncedBy.get(uid) ?? new Set<string>();
      s.add(instance);
      syncedBy.set(uid, s);
    } else {
      syncEnds.set(uid, (syncEnds.get(uid) ?? 0) + 1);
      if (active.get(uid) === instance) active.delete(uid);
    }
  };

  async function startInstance(id: string): Promise<PodWorkerInstance> {
    const bus = await connectBus({ servers: server.url, process: 'pod-worker', node: NODE, logger: silentLog });
    buses.push(bus);
    const logger = process.env['POD_WORKER_TEST_LOG'] ? createLogger({ service: id, level: 'info', stream: process.stderr }) : silentLog;
    const inst = await startPodWorkerInstance(settings(id), { bus, clock: realClock, logger, tracer: trace.getTracer('test'), onSyncEvent });
    instances.push(inst);
    return inst;
  }

  async function workerRecord(uid: string): Promise<WorkerRecord | null> {
    const kv = await driver.kv(Buckets.worker, WorkerRecord);
    return (await kv.get(Keys.podInPartition(NODE, partitionOf(uid, P), uid)))?.value ?? null;
  }

  before(async () => {
    server = await startNatsServer();
    driver = await connectBus({ servers: server.url, process: 'test', node: NODE, logger: silentLog });
    serveFakeNodeServices(driver, NODE, ledger, ac.signal);
    stopPleg = await runFakePleg(driver, NODE, 100);
    statuses = StatusLog.listen(driver, NODE, ac.signal);
    loop = FakeSyncLoop.create(driver, NODE, P);
  });

  after(async () => {
    stopPleg();
    for (const i of instances) await i.abandon().catch(() => undefined);
    ac.abort();
    for (const b of buses) await b.close().catch(() => undefined);
    await driver?.close().catch(() => undefined);
    await server?.stop();
  });

  it(
    'two instances split the partitions, converge 200 pods through create and removal with no per-pod overlap, and an abandoning instance is taken over',
    { timeout: 90_000 },
    async () => {
      const a = await startInstance('inst-a');
      const b = await startInstance('inst-b');
      await eventually(() => a.partitions.owned().length === P / 2 && b.partitions.owned().length === P / 2, {
        timeoutMs: 15_000,
        message: 'partitions balanced 4/4',
      });
      assert.deepEqual([...a.partitions.owned(), ...b.partitions.owned()].sort(), [0, 1, 2, 3, 4, 5, 6, 7]);

      // A poison poke and a misrouted one are dead-lettered; the process keeps working.
      const dead: DeadLetter[] = [];
      driver.subscribeCore(
        Subjects.deadLetter(NODE, 'pod-worker'),
        (d) => {
          const p = DeadLetter.safeParse(d);
          if (p.success) dead.push(p.data);
        },
        ac.signal,
      );
      const poisonSubject = Subjects.work(NODE, 0, 'poison');
      await driver.js.publish(poisonSubject, '{"type":"not-a-poke"}');
      const wrongUid = [...Array(50).keys()].map((i) => `mis-${i}`).find((u) => partitionOf(u, P) !== 1)!;
      await driver.js.publish(Subjects.work(NODE, 1, wrongUid), JSON.stringify({ type: 'kubelet.podworker.WorkPoke.v1', uid: wrongUid, kind: 'sync' }));
      await eventually(() => dead.some((d) => d.subject === poisonSubject && d.reason.includes(poisonSubject)), { timeoutMs: 10_000, message: 'poison poke dead-lettered' });
      await eventually(() => dead.some((d) => d.reason.includes(wrongUid)), { timeoutMs: 10_000, message: 'misrouted poke dead-lettered' });

      // 200 pods in a burst.
      const pods = Array.from({ length: 200 }, (_, i) => testPod(i));
      await Promise.all(pods.map((p) => loop.create(p)));
      await eventually(
        async () => {
          for (const p of pods) {
            if (statuses.last(p.metadata.uid)?.status?.phase !== 'Running') return false;
          }
          return true;
        },
        { timeoutMs: 30_000, message: '200 pods Running' },
      );
      for (const p of pods.slice(0, 20)) {
        const rec = await workerRecord(p.metadata.uid);
        assert.equal(rec?.state, 'sync');
        assert.equal(rec?.runningObserved, true);
      }
      const bySyncer = new Set([...syncedBy.values()].flatMap((s) => [...s]));
      assert.deepEqual([...bySyncer].sort(), ['inst-a', 'inst-b'], 'both instances did work');

      // Remove them all: kill → terminating → terminated → forgotten.
      await Promise.all(pods.map((p) => loop.remove(p)));
      await eventually(() => pods.every((p) => statuses.last(p.metadata.uid)?.kind === 'removed'), { timeoutMs: 30_000, message: '200 pods removed' });
      const killKv = await driver.kv(Buckets.kill, KillRequest);
      const workerKv = await driver.kv(Buckets.worker, WorkerRecord);
      const live = async (kv: { get(k: string): Promise<unknown>; keys(filter: string): Promise<string[]> }): Promise<number> => {
        const keys = await kv.keys(`${nodeToken(NODE)}.>`);
        return (await Promise.all(keys.map((k) => kv.get(k)))).filter((v) => v !== null).length;
      };
      await eventually(async () => (await live(killKv)) === 0, { message: 'kill requests deleted' });
      await eventually(async () => (await live(workerKv)) === 0, { message: 'worker records deleted' });
      for (const p of pods) {
        const kinds = statuses.kinds(p.metadata.uid);
        assert.deepEqual(kinds.slice(-2), ['terminated', 'removed'], `${p.metadata.uid}: ${kinds.join(',')}`);
        assert.equal(ledger.count('syncPod', p.metadata.uid) >= 1, true);
        assert.equal(ledger.count('killPod', p.metadata.uid) >= 1, true);
        assert.equal(ledger.count('unmount', p.metadata.uid) >= 1, true);
      }

      // Instance A abandons its partitions (no release) while new pods arrive: B takes them over after the lease TTL and finishes the work.
      const more = Array.from({ length: 50 }, (_, i) => testPod(i, 'q'));
      const aOwned = a.partitions.owned();
      await Promise.all(more.map((p) => loop.create(p)));
      await a.abandon();
      await eventually(() => b.partitions.owned().length === P, { timeoutMs: 25_000, intervalMs: 200, message: 'B owns every partition' });
      await eventually(() => more.every((p) => statuses.last(p.metadata.uid)?.status?.phase === 'Running'), {
        timeoutMs: 20_000,
        message: '50 more pods Running after takeover',
      });
      const takenOver = more.filter((p) => aOwned.includes(partitionOf(p.metadata.uid, P)));
      assert.ok(takenOver.length > 0);
      for (const p of takenOver) {
        const rec = await workerRecord(p.metadata.uid);
        assert.equal(rec?.state, 'sync');
        assert.ok(syncedBy.get(p.metadata.uid)?.has('inst-b'), `${p.metadata.uid} synced by B`);
      }

      assert.deepEqual(ledger.overlaps, [], 'no concurrent runtime/volume calls for one pod');
      assert.deepEqual(syncOverlaps, [], 'no concurrent syncs for one pod across instances');
      assert.deepEqual(ledger.staleFences, [], 'no request with a stale fence');
    },
  );

  it("reads a pod's desired record and kill request again only when a poke names a newer revision or none", { timeout: 60_000 }, async () => {
    const pod = testPod(0, 'rev');
    const uid = pod.metadata.uid;
    // Every read of the pod's records is a JetStream direct get on its subject, which a plain subscriber sees too.
    const reads = { desired: 0, kill: 0 };
    const key = loop.key(uid);
    const subs = (['desired', 'kill'] as const).map((b) =>
      driver.nc.subscribe(`$JS.API.DIRECT.GET.KV_${Buckets[b]}.>`, {
        callback: (_e, m) => {
          if (m.subject.endsWith(key)) reads[b]++;
        },
      }),
    );
    const settled = async (): Promise<void> => {
      // A poke is acked once a sync that started after it ended; wait for that sync.
      const ends = syncEnds.get(uid) ?? 0;
      await eventually(() => (syncEnds.get(uid) ?? 0) > ends || undefined, { timeoutMs: 20_000, message: `a sync of ${uid}` });
    };
    try {
      await loop.create(pod);
      await eventually(() => statuses.last(uid)?.status?.phase === 'Running', { timeoutMs: 20_000, message: `${uid} Running` });
      await driver.nc.flush();
      const before = { ...reads };
      assert.ok(before.desired >= 1 && before.kill >= 1, 'the first sync read both records');
      for (let i = 0; i < 3; i++) {
        const synced = settled();
        await loop.poke(uid, 'sync');
        await synced;
      }
      await driver.nc.flush();
      assert.deepEqual(reads, before, 'three pokes naming the revisions the worker read (and no kill): no read');

      const updated = settled();
      await loop.create({ ...pod, spec: { ...pod.spec, containers: [{ name: 'c', image: 'busybox:1.37' }] } }, 'update');
      await updated;
      await eventually(() => reads.desired > before.desired || undefined, { timeoutMs: 10_000, message: 'the new desired revision read' });
      assert.equal(reads.kill, before.kill, 'the kill request is not read: the poke names none');
      const afterUpdate = reads.desired;

      const unnamed = settled();
      await loop.poke(uid, 'sync', { desiredRevision: null });
      await unnamed;
      await eventually(() => reads.desired > afterUpdate || undefined, { timeoutMs: 10_000, message: 'a poke naming no desired revision: read' });

      // The kill poke names the new request's revision: read, and the pod is removed.
      await loop.remove(pod);
      await eventually(() => statuses.last(uid)?.kind === 'removed', { timeoutMs: 20_000, message: `${uid} removed` });
      assert.ok(reads.kill > before.kill, 'the kill request read');
    } finally {
      for (const s of subs) s.unsubscribe();
    }
  });
});
