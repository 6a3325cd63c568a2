/**
 * Real pod-worker OS processes (src/main.ts) on a real nats-server:
 * - pods converge, the `sync start` / `sync end` debug log lines show no overlapping syncs of one
 *   pod across the processes, and SIGTERM drains, exits 0 and releases the leases so the other
 *   process takes over at once (before a lease could have expired);
 * - an owner paused (SIGSTOP) past its lease is replaced; the request it had in flight reaches
 *   the receiver after the new owner's and is refused by the fence check, and once resumed
 *   (SIGCONT) it writes nothing more for the partition it lost; then the new owner is killed
 *   (SIGKILL) and the resumed one takes every partition over after the lease TTL.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Buckets, PartitionLease, Keys, WorkerRecord, partitionOf } from '@splitlet/api';
import { connectBus } from '@splitlet/bus';
import type { NatsBus } from '@splitlet/bus';
import { eventually, logRecords, spawnProcess, startNatsServer } from '@splitlet/testkit';
import type { NatsServer, SpawnedProcess } from '@splitlet/testkit';
import { silentLog } from '../fakes.js';
import { CallLedger, FakeSyncLoop, StatusLog, runFakePleg, serveFakeNodeServices, testPod } from './bus-fakes.js';

const NODE = 'proc-node';
const P = 8;
/** The lease bucket's TTL and the default renew period: an unreleased lease outlives its holder by at least TTL − renew. */
const LEASE_TTL_MS = 10_000;
const LEASE_RENEW_MS = 3000;
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

interface SyncLine {
  msg: 'sync start' | 'sync end';
  uid: string;
  instance: string;
  at: number;
}

/** The sync start/end records of a process's JSON log lines. */
function syncLines(p: SpawnedProcess): SyncLine[] {
  return logRecords(p.lines)
    .filter((rec) => rec['msg'] === 'sync start' || rec['msg'] === 'sync end')
    .map((rec) => ({ msg: rec['msg'] as SyncLine['msg'], uid: String(rec['uid']), instance: String(rec['instance']), at: Date.parse(String(rec['time'])) }));
}

/** The JSON log records of a process whose `msg` is `msg`. */
function records(p: SpawnedProcess, msg: string): Record<string, unknown>[] {
  return logRecords(p.lines, msg);
}

/** [start, end] intervals per uid, checking starts and ends alternate within one process. */
function intervals(lines: SyncLine[]): Map<string, [number, number][]> {
  const open = new Map<string, number>();
  const out = new Map<string, [number, number][]>();
  for (const l of lines) {
    if (l.msg === 'sync start') {
      assert.equal(open.has(l.uid), false, `${l.instance}: ${l.uid} started twice without an end`);
      open.set(l.uid, l.at);
    } else {
      const s = open.get(l.uid);
      assert.notEqual(s, undefined, `${l.instance}: ${l.uid} ended without a start`);
      open.delete(l.uid);
      const list = out.get(l.uid) ?? [];
      list.push([s!, l.at]);
      out.set(l.uid, list);
    }
  }
  for (const [uid, s] of open) {
    const list = out.get(uid) ?? [];
    list.push([s, Number.POSITIVE_INFINITY]);
    out.set(uid, list);
  }
  return out;
}

describe('pod-worker processes', () => {
  let server: NatsServer;
  let driver: NatsBus;
  const procs: SpawnedProcess[] = [];
  const ac = new AbortController();
  const ledger = new CallLedger();
  let stopPleg: () => void = () => undefined;

  const spawn = (instance: string, node = NODE, partitions = P): Promise<SpawnedProcess> =>
    spawnProcess({
      name: instance,
      cmd: process.execPath,
      args: ['--import', 'tsx', MAIN],
      env: {
        ...process.env,
        NATS_URL: server.url,
        NODE_NAME: node,
        HEALTH_PORT: '0',
        LOG_LEVEL: 'debug',
        INSTANCE_ID: instance,
        PARTITIONS: String(partitions),
        BALANCE_INTERVAL_MS: '200',
        MEMBER_HEARTBEAT_MS: '1000',
        RUNTIME_CACHE_WAIT_MS: '2000',
        DRAIN_TIMEOUT_MS: '5000',
        OTEL_TRACES_EXPORTER: 'none',
      },
    });

  before(async () => {
    server = await startNatsServer();
    driver = await connectBus({ servers: server.url, process: 'test', node: NODE, logger: silentLog });
    serveFakeNodeServices(driver, NODE, ledger, ac.signal, 20);
    stopPleg = await runFakePleg(driver, NODE, 100);
  });

  after(async () => {
    stopPleg();
    for (const p of procs) {
      try {
        process.kill(p.pid, 'SIGCONT');
      } catch {
        // already gone
      }
      await p.stop('SIGKILL', 1000).catch(() => undefined);
    }
    ac.abort();
    await driver?.close().catch(() => undefined);
    await server?.stop();
  });

  it('converge pods without overlapping syncs across processes; SIGTERM hands the partitions over at once', { timeout: 120_000 }, async () => {
    const statuses = StatusLog.listen(driver, NODE, ac.signal);
    const loop = FakeSyncLoop.create(driver, NODE, P);
    const a = await spawn('proc-a');
    procs.push(a);
    await a.waitForLine('pod-worker instance started', 30_000);
    const b = await spawn('proc-b');
    procs.push(b);
    await b.waitForLine('pod-worker instance started', 30_000);
    const leases = await driver.kv(Buckets.leases, PartitionLease);
    const holders = async (): Promise<string[]> => Promise.all([...Array(P).keys()].map(async (pp) => (await leases.get(Keys.lease(NODE, pp)))?.value?.holder ?? '-'));
    await eventually(async () => (await holders()).filter((h) => h === 'proc-b').length === P / 2, { timeoutMs: 20_000, message: 'partitions balanced' });

    const pods = Array.from({ length: 60 }, (_, i) => testPod(i, 'x'));
    await Promise.all(pods.map((p) => loop.create(p)));
    // SIGTERM proc-a while its pods are (re)syncing: it drains, releases its leases, exits 0.
    await Promise.all(pods.slice(0, 30).map((p) => loop.poke(p.metadata.uid, 'sync')));
    const aHeld = (await holders()).flatMap((h, pp) => (h === 'proc-a' ? [pp] : []));
    assert.equal(aHeld.length, P / 2);
    const code = await a.stop('SIGTERM', 20_000);
    assert.equal(code, 0, a.tail(20));
    const handedOver = Date.now();
    await eventually(async () => (await holders()).every((h) => h === 'proc-b'), { timeoutMs: 30_000, intervalMs: 100, message: 'proc-b holds every partition' });
    // Leases proc-a had not released would expire no sooner than TTL − renew after its exit.
    const tookMs = Date.now() - handedOver;
    assert.ok(tookMs < LEASE_TTL_MS - LEASE_RENEW_MS - 1000, `taken over in ${tookMs} ms: the leases were released, not left to expire`);
    await eventually(() => pods.every((p) => statuses.last(p.metadata.uid)?.status?.phase === 'Running'), { timeoutMs: 30_000, message: 'pods Running' });

    const byProc = [intervals(syncLines(a)), intervals(syncLines(b))];
    assert.ok(byProc[0]!.size > 0 && byProc[1]!.size > 0, 'both processes logged syncs');
    for (const [uid, ia] of byProc[0]!) {
      for (const [s1, e1] of ia) {
        for (const [s2, e2] of byProc[1]!.get(uid) ?? []) {
          assert.ok(e1 <= s2 || e2 <= s1, `${uid}: proc-a [${s1}, ${e1}] overlaps proc-b [${s2}, ${e2}]`);
        }
      }
    }
    assert.deepEqual(ledger.overlaps, []);
    assert.deepEqual(ledger.staleFences, []);
    assert.deepEqual(
      records(a, 'releasing partition')
        .filter((r) => r['mode'] === 'shutdown')
        .map((r) => r['partition'])
        .sort(),
      aHeld,
      'proc-a released every partition it held on SIGTERM',
    );
    assert.deepEqual(records(a, 'deleting partition lease failed (it expires with the bucket TTL)'), [], 'and deleted every lease');
  });

  it('an owner paused past its lease is fenced off and writes nothing more; a killed (-9) owner is taken over after the lease TTL', { timeout: 180_000 }, async () => {
    const node = 'pause-node';
    const partitions = 2;
    const fenced = new CallLedger();
    const nodeAc = new AbortController();
    serveFakeNodeServices(driver, node, fenced, nodeAc.signal, 5);
    const stopNodePleg = await runFakePleg(driver, node, 100);
    try {
      const statuses = StatusLog.listen(driver, node, nodeAc.signal);
      const loop = FakeSyncLoop.create(driver, node, partitions);
      const leases = await driver.kv(Buckets.leases, PartitionLease);
      const workers = await driver.kv(Buckets.worker, WorkerRecord);
      const lease = async (pp: number) => (await leases.get(Keys.lease(node, pp))) ?? null;
      const holders = async (): Promise<string[]> => Promise.all([...Array(partitions).keys()].map(async (pp) => (await lease(pp))?.value?.holder ?? '-'));

      const c = await spawn('proc-c', node, partitions);
      procs.push(c);
      await c.waitForLine('pod-worker instance started', 30_000);
      const d = await spawn('proc-d', node, partitions);
      procs.push(d);
      await d.waitForLine('pod-worker instance started', 30_000);
      await eventually(async () => (await holders()).sort().join() === 'proc-c,proc-d', { timeoutMs: 30_000, message: 'one partition each' });

      // A pod of proc-c's partition; its mount request is held at the receiver before the fence check.
      const pc = (await holders()).indexOf('proc-c');
      const pod = Array.from({ length: 50 }, (_, i) => testPod(i, 'z')).find((p) => partitionOf(p.metadata.uid, partitions) === pc)!;
      const uid = pod.metadata.uid;
      const held = fenced.hold('mount', uid);
      await loop.create(pod);
      const oldFence = await held.arrived;
      assert.equal(oldFence.partition, pc);

      // Pause proc-c past its lease: proc-d takes the partition over with a newer epoch and syncs the pod.
      process.kill(c.pid, 'SIGSTOP');
      let resumed = false;
      try {
        await eventually(async () => (await holders()).every((h) => h === 'proc-d'), { timeoutMs: 40_000, intervalMs: 200, message: 'proc-d holds every partition' });
        // The lease record is written before proc-d logs the acquisition: wait for the line, not just the record.
        const acquired = () => records(d, 'partition acquired').find((r) => r['partition'] === pc);
        await eventually(() => acquired() !== undefined, { timeoutMs: 20_000, message: `proc-d logs acquiring partition ${pc}` });
        const newEpoch = acquired()?.['epoch'] as number;
        assert.ok(newEpoch > oldFence.epoch, `new epoch ${newEpoch} > ${oldFence.epoch}`);
        await eventually(() => statuses.last(uid)?.status?.phase === 'Running', { timeoutMs: 30_000, message: `${uid} Running under proc-d` });
        assert.ok(
          fenced.calls.some((x) => x.op === 'syncPod' && x.uid === uid && x.fence.epoch === newEpoch),
          `proc-d synced the pod with its own fence (epoch ${newEpoch}); the pod's calls: ${JSON.stringify(fenced.calls.filter((x) => x.uid === uid))}; proc-d acquired: ${JSON.stringify(records(d, 'partition acquired'))}`,
        );

        // The paused owner's request reaches the fence check late: refused.
        held.release();
        await eventually(() => fenced.staleFences.length > 0, { timeoutMs: 10_000, message: 'the late request refused' });
        assert.deepEqual(fenced.staleFences, [`mount ${uid}: fenced off: partition ${pc} epoch ${oldFence.epoch} is older than epoch ${newEpoch} already seen`]);

        // Resumed, proc-c notices the lost lease and writes nothing more for the partition.
        const callsBefore = fenced.calls.length;
        process.kill(c.pid, 'SIGCONT');
        resumed = true;
        await eventually(() => records(c, 'partition lease lost').some((r) => r['partition'] === pc && r['epoch'] === oldFence.epoch), {
          timeoutMs: 20_000,
          message: 'proc-c logs the lost lease of the paused epoch',
        });
        await loop.poke(uid, 'sync');
        await eventually(() => fenced.calls.slice(callsBefore).some((x) => x.uid === uid && x.fence.epoch === newEpoch), { timeoutMs: 20_000, message: 'the new owner syncs on' });
        assert.deepEqual(
          fenced.calls.filter((x) => x.fence.partition === pc && x.fence.epoch === oldFence.epoch && x.uid === uid),
          [],
          'no request of the paused epoch for the pod was ever carried out',
        );
        const rec = await workers.get(loop.key(uid));
        assert.equal(rec?.value?.epoch, newEpoch, "the worker record is the new owner's");
      } finally {
        held.release(); // a failure above must not leave the fake node service waiting (the bus would not close)
        if (!resumed) process.kill(c.pid, 'SIGCONT');
      }

      // Kill the owner outright: the leases are not released, so proc-c takes over only once they expire.
      const killedAt = Date.now();
      assert.equal(await d.stop('SIGKILL', 5000), 137);
      await eventually(async () => (await holders()).every((h) => h === 'proc-c'), { timeoutMs: 40_000, intervalMs: 200, message: 'proc-c holds every partition' });
      // Renewed at most one renew period before the kill, the leases expire no sooner than TTL − renew after it.
      const tookMs = Date.now() - killedAt;
      assert.ok(tookMs >= LEASE_TTL_MS - LEASE_RENEW_MS, `taken over after ${tookMs} ms: only once the killed owner's leases expired`);
      const more = Array.from({ length: 10 }, (_, i) => testPod(i, 'y'));
      await Promise.all(more.map((p) => loop.create(p)));
      await eventually(() => more.every((p) => statuses.last(p.metadata.uid)?.status?.phase === 'Running'), { timeoutMs: 30_000, message: 'new pods Running under proc-c' });
      assert.deepEqual(fenced.overlaps, [], 'no concurrent runtime/volume calls for one pod');
    } finally {
      stopNodePleg();
      nodeAc.abort();
    }
  });
});
