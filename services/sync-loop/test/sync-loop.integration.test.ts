/**
 * sync-loop against a real nats-server: the real process (src/main.ts through tsx), PodUpdates on
 * `SL_CONFIG`, and what comes out: desired pods, kill requests, pokes, statuses, events, metrics,
 * dead letters, spans.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  Buckets,
  DeadLetter,
  DesiredPod,
  KillRequest,
  Keys,
  KubeEvent,
  NodeCapacity,
  PlegMessage,
  type PodLifecycleEvent,
  PodStatusUpdate,
  PodUpdate,
  SpanBatch,
  type SpanRecord,
  Streams,
  Subjects,
  WorkPoke,
  partitionOf,
} from '@splitlet/api';
import type { MsgHdrs } from '@nats-io/transport-node';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { aPod } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, logRecords, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';

const NODE = 'node-c.local';
const PARTITIONS = 8;
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

function pod(uid: string, cpu?: string) {
  return aPod({
    metadata: { uid, name: `web-${uid}`, annotations: { 'kubernetes.io/config.source': 'file' }, creationTimestamp: '2024-01-01T00:00:00Z' },
    spec: { containers: [{ name: 'c', image: 'busybox', ...(cpu === undefined ? {} : { resources: { requests: { cpu } } }) }] },
  });
}

function podUpdate(op: PodUpdate['op'], pods: ReturnType<typeof pod>[]): PodUpdate {
  return {
    type: 'kubelet.config.PodUpdate.v1',
    op,
    source: 'file',
    sources: ['file'],
    items: pods.map((p, i) => ({ pod: p, trace: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b${i}-01` } })),
    sentAt: new Date().toISOString(),
  };
}

describe('sync-loop (integration)', () => {
  let nats: NatsServer;
  let bus: NatsBus;
  let dir: TempDir;
  let proc: SpawnedProcess;
  const ac = new AbortController();
  const pokes: Array<{ poke: WorkPoke; subject: string; traceparent: string | undefined }> = [];
  const statuses: PodStatusUpdate[] = [];
  const events: KubeEvent[] = [];
  const deadLetters: DeadLetter[] = [];
  const spans: SpanRecord[] = [];

  const startSyncLoop = (): Promise<SpawnedProcess> =>
    spawnProcess({
      cmd: process.execPath,
      args: ['--import', 'tsx', join(repoRoot, 'services/sync-loop/src/main.ts')],
      cwd: repoRoot,
      name: 'sync-loop',
      env: {
        NATS_URL: nats.url,
        NODE_NAME: NODE,
        HEALTH_PORT: '0',
        HEALTH_PORT_FILE: join(dir.path, 'port'),
        PARTITIONS: String(PARTITIONS),
        HOUSEKEEPING_MS: '300',
        SYNC_TICK_MS: '200',
      },
    });

  before(async () => {
    nats = await startNatsServer();
    dir = await makeTempDir('sync-loop-it-');
    bus = await connectBus({ servers: nats.url, process: 'test', node: NODE, logger: createLogger({ service: 'test', stream: { write: () => true } }) });
    const consume = <T>(
      schema: Parameters<NatsBus['consume']>[0],
      stream: string,
      durable: string,
      filterSubject: string,
      sink: (d: { data: T; subject: string; headers: MsgHdrs | undefined }) => void,
    ) => bus.consume(schema, { stream, durable, filterSubject, signal: ac.signal }, async (d) => sink(d as never));
    await consume<WorkPoke>(WorkPoke, Streams.work, 'test-work', `sl.${NODE.replaceAll('.', '_')}.work.*.*`, (d) =>
      pokes.push({ poke: d.data, subject: d.subject, traceparent: d.headers?.get('traceparent') || undefined }),
    );
    await consume<PodStatusUpdate>(PodStatusUpdate, Streams.status, 'test-status', Subjects.statusAll(NODE), (d) => statuses.push(d.data));
    await consume<KubeEvent>(KubeEvent, Streams.events, 'test-events', Subjects.eventsAll(NODE), (d) => events.push(d.data));
    await consume<DeadLetter>(DeadLetter, Streams.deadLetter, 'test-dlq', Subjects.deadLetter(NODE, 'sync-loop'), (d) => deadLetters.push(d.data));
    await consume<SpanBatch>(SpanBatch, Streams.spans, 'test-spans', Subjects.spansAll(NODE), (d) => spans.push(...d.data.spans));
    proc = await startSyncLoop();
    // No capacity published for the node yet: sync-loop says so and admits nothing. At first that is
    // the node starting (info), not a warning.
    await proc.waitForLine(/"level":"info","service":"sync-loop","msg":"waiting for the node capacity record/, 30_000);
  });

  after(async () => {
    const code = await proc?.stop();
    ac.abort();
    await bus?.close();
    await nats?.stop();
    await dir?.cleanup();
    assert.equal(code, 0, `sync-loop exited with ${code}:\n${proc?.tail(30)}`);
  });

  const key = (uid: string) => Keys.podInPartition(NODE, partitionOf(uid, PARTITIONS), uid);

  it('admits nothing until the node published its capacity, then admits against it', async () => {
    const port = (await readFile(join(dir.path, 'port'), 'utf8')).trim();
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    assert.equal(ready.status, 503);
    assert.match(await ready.text(), /node-capacity: no capacity published for node node-c\.local yet \(volume-manager publishes it\)/);
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), podUpdate('ADD', [pod('uid-early')]));
    const desired = await bus.kv(Buckets.desired, DesiredPod);
    assert.equal(
      proc.lines.some((l) => l.includes('sync loop running')),
      false,
      'the leader session waits for the capacity',
    );
    assert.equal(await desired.get(key('uid-early')), null);

    // What volume-manager publishes on the node (here: 1 CPU, 4Gi allocatable).
    const resources = { cpu: '1', memory: String(4 * 1024 ** 3), 'ephemeral-storage': String(20 * 1024 ** 3), pods: '110' };
    await (
      await bus.kv(Buckets.nodeCapacity, NodeCapacity)
    ).put(Keys.node(NODE), {
      type: 'kubelet.node.NodeCapacity.v1',
      node: NODE,
      capacity: { ...resources, cpu: '2' },
      allocatable: resources,
      observedAt: new Date().toISOString(),
    });
    await proc.waitForLine('node capacity received', 30_000);
    await proc.waitForLine('sync loop running', 30_000);
    const d = await eventually(async () => (await desired.get(key('uid-early')))?.value, { message: 'desired uid-early, admitted once the capacity is known' });
    assert.equal(d.rejected, undefined);
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 || undefined, { message: 'ready once the capacity is known' });
  });

  it("ADD → a desired record and a create poke that names its revision and continues the pod's trace", async () => {
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), podUpdate('ADD', [pod('uid-1')]));
    const kv = await bus.kv(Buckets.desired, DesiredPod);
    const entry = await eventually(async () => kv.get(key('uid-1')), { message: 'desired uid-1' });
    const d = entry.value!;
    assert.equal(d.updateType, 'create');
    assert.equal(d.rejected, undefined);
    assert.equal(d.creationTrace?.['traceparent'], `00-${TRACE_ID}-00f067aa0ba902b0-01`);
    const p = await eventually(() => pokes.find((x) => x.poke.uid === 'uid-1'), { message: 'create poke' });
    assert.equal(p.poke.kind, 'create');
    assert.equal(p.poke.desiredRevision, entry.revision, "the poke names the put's revision: a pod worker holding it need not read it again");
    assert.equal(p.poke.killRevision, 0, 'and no kill request');
    assert.equal(p.subject, Subjects.work(NODE, partitionOf('uid-1', PARTITIONS), 'uid-1'));
    assert.ok(p.traceparent?.startsWith(`00-${TRACE_ID}-`), `poke traceparent ${p.traceparent}`);
    const admit = await eventually(() => spans.find((s) => s.name === 'admitPod' && s.attributes['k8s.pod.uid'] === 'uid-1'), { message: 'admitPod span on SL_SPANS' });
    assert.equal(admit.traceId, TRACE_ID);
    assert.equal(admit.service, 'sync-loop');
  });

  it('an over-capacity pod → Failed status, Warning event, admission metric', async () => {
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), podUpdate('ADD', [pod('uid-big', '2')]));
    const s = await eventually(() => statuses.find((x) => x.uid === 'uid-big'), { message: 'status of the rejected pod' });
    assert.equal(s.status?.phase, 'Failed');
    assert.equal(s.status?.reason, 'OutOfcpu');
    assert.equal(s.status?.message, "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000");
    const e = await eventually(() => events.find((x) => x.involvedObject.uid === 'uid-big'), { message: 'event' });
    assert.equal(e.eventType, 'Warning');
    assert.equal(e.reason, 'OutOfcpu');
    assert.equal(e.source.host, NODE);
    const kv = await bus.kv(Buckets.desired, DesiredPod);
    assert.equal((await kv.get(key('uid-big')))?.value?.rejected?.reason, 'OutOfcpu');
    assert.equal(
      pokes.some((x) => x.poke.uid === 'uid-big'),
      false,
    );
    const port = (await readFile(join(dir.path, 'port'), 'utf8')).trim();
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /kubelet_admission_rejections_total\{reason="OutOfcpu",service="sync-loop"\} 1/);
  });

  it('REMOVE → the desired record goes and a kill request appears, with a kill poke', async () => {
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), podUpdate('REMOVE', [pod('uid-1')]));
    const kills = await bus.kv(Buckets.kill, KillRequest);
    const stored = await eventually(async () => kills.get(key('uid-1')), { message: 'kill request' });
    const k = stored.value!;
    assert.equal(k.reason, 'removed');
    assert.equal(k.pod?.metadata.uid, 'uid-1');
    const desired = await bus.kv(Buckets.desired, DesiredPod);
    assert.equal(await desired.get(key('uid-1')), null);
    const p = await eventually(() => pokes.find((x) => x.poke.uid === 'uid-1' && x.poke.kind === 'kill'), { message: 'kill poke' });
    assert.equal(p.poke.desiredRevision, undefined, 'after the delete a poke names no desired revision: the pod worker reads the record');
    assert.equal(p.poke.killRevision, stored.revision, "the kill poke names the request's revision");
  });

  it('a malformed message on the config subject is dead-lettered and the loop keeps working', async () => {
    const subject = Subjects.config(NODE, 'http');
    await bus.js.publish(subject, JSON.stringify({ type: 'kubelet.config.PodUpdate.v1', op: 'ADD', items: 'nope' }));
    const dl = await eventually(() => deadLetters[0], { message: 'dead letter' });
    assert.equal(dl.subject, subject);
    assert.equal(dl.process, 'sync-loop');
    assert.match(dl.reason, new RegExp(`message on ${subject.replaceAll('.', '\\.')} does not match its schema`));
    await bus.publish(PodUpdate, Subjects.config(NODE, 'file'), podUpdate('ADD', [pod('uid-2')]));
    await eventually(() => pokes.some((x) => x.poke.uid === 'uid-2' && x.poke.kind === 'create'), { message: 'uid-2 handled after the poison message' });
  });

  it('reports healthy and persists the seen sources', async () => {
    const port = (await readFile(join(dir.path, 'port'), 'utf8')).trim();
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    const nodeKv = await bus.kv(Buckets.node, (await import('../src/adapters/kv-stores.js')).NodeSourcesRecord);
    const rec = await eventually(async () => (await nodeKv.get(Keys.node(NODE)))?.value, { message: 'sl_node record' });
    assert.deepEqual(rec.seen, ['file']);
  });

  it('a restarted sync-loop skips a replayed ADD of an earlier config-source whose pod a newer one removed', async () => {
    const subject = Subjects.config(NODE, 'file');
    const from = (publisher: string, seq: number, u: PodUpdate): PodUpdate => ({ ...u, origin: { publisher, seq } });
    const oldAdd = from('cs-old', 5, podUpdate('ADD', [pod('uid-r')]));
    await bus.publish(PodUpdate, subject, oldAdd);
    await eventually(() => pokes.some((x) => x.poke.uid === 'uid-r' && x.poke.kind === 'create'), { message: 'uid-r created' });
    await bus.publish(PodUpdate, subject, from('cs-new', 1, podUpdate('REMOVE', [pod('uid-r')])));
    await eventually(() => pokes.some((x) => x.poke.uid === 'uid-r' && x.poke.kind === 'kill'), { message: 'uid-r killed' });
    const { AppliedUpdatesRecord } = await import('../src/adapters/kv-stores.js');
    const marks = await (await bus.kv(Buckets.node, AppliedUpdatesRecord)).get(Keys.appliedUpdates(NODE));
    const { ALL_APPLIED } = await import('../src/sync-loop/applied-updates.js');
    assert.deepEqual(marks?.value?.publishers, [{ publisher: 'cs-old', seq: ALL_APPLIED }], 'cs-old done once cs-new started');

    const code = await proc.stop();
    assert.equal(code, 0, `sync-loop exited with ${code}:\n${proc.tail(30)}`);
    proc = await startSyncLoop();
    await proc.waitForLine('sync loop running', 30_000);
    // What SL_CONFIG delivers again after nats-server lost its acks: no record names cs-old any more.
    await bus.publish(PodUpdate, subject, oldAdd);
    await eventually(() => logRecords(proc.lines, 'skipping a pod update applied already (delivered again by the bus)').some((r) => r['publisher'] === 'cs-old'), {
      message: 'the replayed ADD skipped',
    });
    assert.equal(await (await bus.kv(Buckets.desired, DesiredPod)).get(key('uid-r')), null);
    assert.equal(pokes.filter((x) => x.poke.uid === 'uid-r' && x.poke.kind === 'create').length, 1, 'no second create poke');

    // The restarted loop listed sl_desired: its pokes name the revisions it listed.
    const early = await (await bus.kv(Buckets.desired, DesiredPod)).get(key('uid-early'));
    assert.ok(early?.value, 'uid-early is still desired');
    const started: PodLifecycleEvent = {
      type: 'kubelet.pleg.PodLifecycleEvent.v1',
      uid: 'uid-early',
      event: 'ContainerStarted',
      data: 'c1',
      at: new Date().toISOString(),
      cacheRevision: 7,
    };
    await bus.publish(PlegMessage, Subjects.pleg(NODE, 'uid-early'), { type: 'kubelet.pleg.PodLifecycleEventList.v1', items: [started] });
    const p = await eventually(() => pokes.find((x) => x.poke.uid === 'uid-early' && x.poke.kind === 'sync'), { message: 'the PLEG event pokes uid-early' });
    assert.equal(p.poke.desiredRevision, early.revision);
  });
});
