/**
 * Two real pod-worker OS processes (src/main.ts) on a real nats-server: pods converge, the
 * `sync start` / `sync end` debug log lines show no overlapping syncs of one pod across the
 * processes, and SIGTERM drains, exits 0 and releases the leases so the other process takes over
 * at once (well before the 10 s lease TTL).
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Buckets, PartitionLease, Keys } from '@splitlet/api';
import { connectBus } from '@splitlet/bus';
import type { NatsBus } from '@splitlet/bus';
import { eventually, spawnProcess, startNatsServer } from '@splitlet/testkit';
import type { NatsServer, SpawnedProcess } from '@splitlet/testkit';
import { silentLog } from '../fakes.js';
import { CallLedger, FakeSyncLoop, StatusLog, runFakePleg, serveFakeNodeServices, testPod } from './bus-fakes.js';

const NODE = 'proc-node';
const P = 8;
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

interface SyncLine {
  msg: 'sync start' | 'sync end';
  uid: string;
  instance: string;
  at: number;
}

/** The sync start/end records of a process's JSON log lines. */
function syncLines(p: SpawnedProcess): SyncLine[] {
  const out: SyncLine[] = [];
  for (const line of p.lines) {
    if (!line.startsWith('{')) continue;
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (rec['msg'] === 'sync start' || rec['msg'] === 'sync end') {
      out.push({ msg: rec['msg'], uid: String(rec['uid']), instance: String(rec['instance']), at: Date.parse(String(rec['time'])) });
    }
  }
  return out;
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

  const spawn = (instance: string): Promise<SpawnedProcess> =>
    spawnProcess({
      name: instance,
      cmd: process.execPath,
      args: ['--import', 'tsx', MAIN],
      env: {
        ...process.env,
        NATS_URL: server.url,
        NODE_NAME: NODE,
        HEALTH_PORT: '0',
        LOG_LEVEL: 'debug',
        INSTANCE_ID: instance,
        PARTITIONS: String(P),
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
    for (const p of procs) await p.stop('SIGKILL', 1000).catch(() => undefined);
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
    const holders = async (): Promise<string[]> =>
      Promise.all([...Array(P).keys()].map(async (pp) => (await leases.get(Keys.lease(NODE, pp)))?.value?.holder ?? '-'));
    await eventually(async () => (await holders()).filter((h) => h === 'proc-b').length === P / 2, { timeoutMs: 20_000, message: 'partitions balanced' });

    const pods = Array.from({ length: 60 }, (_, i) => testPod(i, 'x'));
    await Promise.all(pods.map((p) => loop.create(p)));
    // SIGTERM proc-a while its pods are (re)syncing: it drains, releases its leases, exits 0.
    await Promise.all(pods.slice(0, 30).map((p) => loop.poke(p.metadata.uid, 'sync')));
    const code = await a.stop('SIGTERM', 20_000);
    assert.equal(code, 0, a.tail(20));
    const handedOver = Date.now();
    await eventually(async () => (await holders()).every((h) => h === 'proc-b'), { timeoutMs: 8000, intervalMs: 100, message: 'proc-b holds every partition' });
    assert.ok(Date.now() - handedOver < 8000, 'taken over before the lease TTL could expire');
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
    assert.ok(a.lines.some((l) => l.includes('"msg":"releasing partition"')), 'proc-a released its partitions');
  });
});
