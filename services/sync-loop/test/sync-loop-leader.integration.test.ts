/**
 * Two sync-loop processes for one node against a real nats-server: only the lease holder consumes;
 * after the leader is killed (-9) the standby takes over within the lease TTL and carries on; a
 * leader paused (SIGSTOP) past its lease and resumed (SIGCONT) writes nothing more (fencing).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Buckets, DesiredPod, Keys, NodeCapacity, PodUpdate, Subjects, partitionOf } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { aPod } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, logRecords, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess } from '@splitlet/testkit';

const NODE = 'node-d';
/** The leader elector's log line when it takes the lease. */
const LEADING = 'acquired the sync-loop leader lease; leading';

/** The JSON log records of a process whose `msg` is `msg`. */
function records(p: SpawnedProcess, msg: string): Record<string, unknown>[] {
  return logRecords(p.lines, msg);
}
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

function add(uid: string): PodUpdate {
  return {
    type: 'kubelet.config.PodUpdate.v1',
    op: 'ADD',
    source: 'file',
    sources: ['file'],
    items: [{ pod: aPod({ metadata: { uid, name: `p-${uid}` } }) }],
    sentAt: new Date().toISOString(),
  };
}

describe('sync-loop leadership (integration)', () => {
  let nats: NatsServer;
  let bus: NatsBus;
  const procs: SpawnedProcess[] = [];

  const start = (name: string) =>
    spawnProcess({
      cmd: process.execPath,
      args: ['--import', 'tsx', join(repoRoot, 'services/sync-loop/src/main.ts')],
      cwd: repoRoot,
      name,
      env: { NATS_URL: nats.url, NODE_NAME: NODE, HEALTH_PORT: '0', OTEL_SDK_DISABLED: 'true' },
    });

  before(async () => {
    nats = await startNatsServer();
    bus = await connectBus({ servers: nats.url, process: 'test', node: NODE, logger: createLogger({ service: 'test', stream: { write: () => true } }) });
    // The node's capacity, as its volume-manager publishes it: admission needs it.
    const resources = { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' };
    await (
      await bus.kv(Buckets.nodeCapacity, NodeCapacity)
    ).put(Keys.node(NODE), {
      type: 'kubelet.node.NodeCapacity.v1',
      node: NODE,
      capacity: resources,
      allocatable: resources,
      observedAt: new Date().toISOString(),
    });
  });

  after(async () => {
    for (const p of procs) await p.stop();
    await bus?.close();
    await nats?.stop();
  });

  it('one leads, the standby takes over after the leader is killed', async () => {
    const a = await start('sync-loop-a');
    procs.push(a);
    await a.waitForLine('sync loop running', 30_000);
    const b = await start('sync-loop-b');
    procs.push(b);
    await b.waitForLine('sync-loop started', 30_000);

    const desired = await bus.kv(Buckets.desired, DesiredPod);
    const key = (uid: string) => Keys.podInPartition(NODE, partitionOf(uid), uid);
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), add('one'));
    await eventually(async () => (await desired.get(key('one')))?.value, { message: 'desired one' });
    assert.equal(records(a, LEADING).length, 1, 'the leader logged taking the lease');
    assert.equal(records(b, LEADING).length, 0, 'the standby must not lead while the leader lives');

    await a.kill();
    await b.waitForLine('sync loop running', 20_000);
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), add('two'));
    await eventually(async () => (await desired.get(key('two')))?.value, { message: 'desired two, handled by the new leader' });
    assert.equal(records(b, LEADING).length, 1, 'the standby took the lease');
    assert.deepEqual(
      records(b, 'sync loop running').map((r) => r['desiredPods']),
      [1],
      'the new leader rebuilt its pod manager from sl_desired',
    );
  });

  it('a leader paused past its lease (SIGSTOP, SIGCONT) cannot write: no sl_desired, sl_kill or poke of its epoch lands after', async () => {
    // Everything the leaders write, as it reaches the server, with the writer's epoch.
    const seen: { subject: string; epoch: number | undefined; at: number }[] = [];
    const record = (subject: string, data: Uint8Array): void => {
      let epoch: number | undefined;
      try {
        const v = JSON.parse(new TextDecoder().decode(data)) as { leaderEpoch?: number };
        epoch = v.leaderEpoch;
      } catch {
        epoch = undefined; // a KV delete marker has an empty body
      }
      seen.push({ subject, epoch, at: Date.now() });
    };
    const subs = ['$KV.sl_desired.>', '$KV.sl_kill.>', `sl.${NODE}.work.>`].map((subject) => bus.nc.subscribe(subject, { callback: (_e, m) => record(m.subject, m.data) }));
    await bus.nc.flush();
    for (const p of procs) await p.stop(); // the previous test's leader releases its lease
    const a = await start('sync-loop-pa');
    procs.push(a);
    await a.waitForLine('sync loop running', 30_000);
    const b = await start('sync-loop-pb');
    procs.push(b);
    await b.waitForLine('sync-loop started', 30_000);
    const epochOf = (p: SpawnedProcess): number => {
      const r = records(p, LEADING).at(-1);
      assert.ok(r !== undefined && typeof r['epoch'] === 'number', `${p.name} logged its leader epoch`);
      return r['epoch'];
    };
    const epochA = epochOf(a);

    const desired = await bus.kv(Buckets.desired, DesiredPod);
    const key = (uid: string) => Keys.podInPartition(NODE, partitionOf(uid), uid);
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), add('before-stop'));
    const before = await eventually(async () => (await desired.get(key('before-stop')))?.value, { message: 'desired before-stop' });
    assert.equal(before.leaderEpoch, epochA, 'the leader stamps its epoch on what it writes');
    // The poke follows the desired write: wait until it reached the server too, so nothing the leader
    // sent while it held its lease is still in its socket when it is stopped (a loaded machine).
    await eventually(() => seen.some((w) => w.subject.startsWith(`sl.${NODE}.work.`) && w.subject.endsWith('.before-stop')), { message: 'the poke of before-stop' });

    process.kill(a.pid, 'SIGSTOP');
    let continued = false;
    try {
      await b.waitForLine('sync loop running', 30_000);
      const epochB = epochOf(b);
      assert.ok(epochB > epochA, `the new term's epoch ${epochB} is newer than ${epochA}`);
      // Updates while the old leader sleeps: its pull requests may still be open at the server, so
      // some of these can wait in its socket for when it resumes.
      for (let i = 0; i < 10; i++) await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), add(`during-stop-${i}`));
      await new Promise((r) => setTimeout(r, 2000));
      process.kill(a.pid, 'SIGCONT');
      continued = true;
    } finally {
      if (!continued) process.kill(a.pid, 'SIGCONT');
    }
    const resumedAt = Date.now();
    await a.waitForLine('stopped leading', 30_000);
    for (let i = 0; i < 10; i++) {
      const uid = `during-stop-${i}`;
      const d = await eventually(async () => (await desired.get(key(uid)))?.value, { message: `desired ${uid}`, timeoutMs: 30_000 });
      assert.notEqual(d.leaderEpoch, epochA, `${uid} was not written by the paused leader`);
    }
    // Give a resumed writer time to land anything it still had, then look.
    await new Promise((r) => setTimeout(r, 3000));
    for (const s of subs) s.unsubscribe();
    const late = seen.filter((w) => w.at >= resumedAt && w.epoch === epochA);
    assert.deepEqual(late, [], 'no write of the paused leader landed after SIGCONT');
    const refused = a.lines.filter((l) => l.includes(`leader term ${epochA}`)).length;
    console.log(
      `fencing: ${seen.length} leader writes observed, ${seen.filter((w) => w.at >= resumedAt).length} after SIGCONT, 0 of epoch ${epochA}; the old leader logged ${refused} refused writes`,
    );
    await a.stop();
    await b.stop();
  });
});
