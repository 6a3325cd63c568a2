/**
 * config-source as a real process against a real nats-server: manifests in a temp dir become
 * PodUpdates on `sl.<node>.config.file` (stream SL_CONFIG), bad manifests become events and logs,
 * spans reach SL_SPANS, SIGTERM exits 0.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Msg, Subscription } from '@nats-io/transport-node';
import { KubeEvent, PodUpdate, SpanBatch, Streams, Subjects, nodeToken } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { eventually, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';
import { decodeManifest } from '../src/sources/manifest-decoder.js';
import { manifest, memoryLogger } from './helpers.js';

const NODE = 'node-b.example';
const REPO = resolve(import.meta.dirname, '../../..');

function collect<T>(bus: NatsBus, subject: string, parse: (x: unknown) => T): { msgs: T[]; sub: Subscription } {
  const msgs: T[] = [];
  const sub = bus.nc.subscribe(subject, { callback: (_e, m: Msg) => void msgs.push(parse(m.json())) });
  return { msgs, sub };
}

describe('config-source process (real nats-server)', () => {
  let nats: NatsServer;
  let tmp: TempDir;
  let proc: SpawnedProcess;
  let bus: NatsBus;
  let updates: { msgs: PodUpdate[]; sub: Subscription };
  let nodeEvents: { msgs: KubeEvent[]; sub: Subscription };
  let spans: { msgs: SpanBatch[]; sub: Subscription };
  const allSpans = () => spans.msgs.flatMap((b) => b.spans);
  const dir = (): string => join(tmp.path, 'manifests');
  const summary = (): string[] => updates.msgs.map((u) => `${u.op}:${u.items.map((i) => i.pod.metadata.name).join(',')}`);

  before(async () => {
    nats = await startNatsServer();
    tmp = await makeTempDir('cs-int-');
    bus = await connectBus({ servers: nats.url, process: 'cs-test', node: NODE, logger: memoryLogger().logger });
    updates = collect(bus, Subjects.configAll(NODE), (x) => PodUpdate.parse(x));
    nodeEvents = collect(bus, Subjects.events(NODE, nodeToken(NODE)), (x) => KubeEvent.parse(x));
    spans = collect(bus, Subjects.spansAll(NODE), (x) => SpanBatch.parse(x));
    await bus.flush();
    await mkdir(dir());
    proc = await spawnProcess({
      cmd: process.execPath,
      args: ['--import', 'tsx', 'services/config-source/src/main.ts'],
      cwd: REPO,
      name: 'config-source',
      env: { NATS_URL: nats.url, NODE_NAME: NODE, MANIFEST_DIR: dir(), API_SOURCE: 'false', HEALTH_PORT: '0', LOG_LEVEL: 'info', OTEL_TRACES_EXPORTER: 'none' },
    });
    await proc.waitForLine('"msg":"started"', 30_000);
  });

  after(async () => {
    await bus?.close();
    if (proc !== undefined && proc.status() === undefined) await proc.stop();
    await nats?.stop();
    await tmp?.cleanup();
  });

  it('an empty manifest dir marks the source seen (empty ADD)', async () => {
    await eventually(() => updates.msgs.length === 1, { timeoutMs: 10_000 });
    const u = updates.msgs[0]!;
    assert.deepEqual([u.op, u.source, u.sources, u.items], ['ADD', 'file', ['file'], []]);
  });

  it('a new manifest → ADD with the static pod name, hash UID, annotations and a trace', async () => {
    const path = join(dir(), 'web.yaml');
    const text = manifest('web', 'nginx:1.27');
    await writeFile(path, text);
    await eventually(() => updates.msgs.length === 2, { timeoutMs: 10_000 });
    const u = updates.msgs[1]!;
    assert.equal(u.op, 'ADD');
    const pod = u.items[0]!.pod;
    const expected = decodeManifest(text, NODE, { kind: 'file', path });
    assert.ok(expected.ok);
    assert.equal(pod.metadata.name, 'web-node-b.example');
    assert.equal(pod.metadata.uid, expected.pods[0]!.metadata.uid);
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.hash'], pod.metadata.uid);
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.match(pod.metadata.annotations?.['kubernetes.io/config.seen'] ?? '', /^\d{4}-\d\d-\d\dT/);
    assert.match(u.items[0]!.trace?.['traceparent'] ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const traceId = u.items[0]!.trace!['traceparent']!.split('-')[1];
    const span = await eventually(() => allSpans().find((s) => s.name === 'config.add' && s.traceId === traceId), { timeoutMs: 5000 });
    assert.equal(span.attributes['k8s.pod.uid'], pod.metadata.uid);
    assert.equal(span.attributes['splitlet.config.path'], path);
    assert.equal(span.service, 'config-source');
    // The publish's PRODUCER span is a child of the pod's span, in the same trace.
    await eventually(() => allSpans().some((s) => s.traceId === traceId && s.name === 'send sl.{node}.config.file' && s.parentSpanId === span.spanId), { timeoutMs: 5000 });
    const info = await bus.jsm.streams.info(Streams.config);
    assert.ok(info.state.messages >= 2, 'PodUpdates are persisted in SL_CONFIG');
  });

  it('a manifest with a uid: modify → UPDATE, delete → REMOVE', async () => {
    const path = join(dir(), 'api.yaml');
    await writeFile(path, manifest('api', 'busybox:1.36', '  uid: api-uid-1\n'));
    await eventually(() => summary().at(-1) === 'ADD:api-node-b.example', { timeoutMs: 10_000 });
    const n = updates.msgs.length;
    await writeFile(path, manifest('api', 'busybox:1.37', '  uid: api-uid-1\n'));
    await eventually(() => updates.msgs.length === n + 1, { timeoutMs: 10_000 });
    const upd = updates.msgs[n]!;
    assert.equal(upd.op, 'UPDATE');
    assert.equal(upd.items[0]!.pod.metadata.uid, 'api-uid-1');
    assert.equal(upd.items[0]!.pod.spec.containers[0]!.image, 'busybox:1.37');
    await rm(path);
    await eventually(() => updates.msgs.length === n + 2, { timeoutMs: 10_000 });
    assert.equal(summary().at(-1), 'REMOVE:api-node-b.example');
    assert.equal(updates.msgs.at(-1)!.items[0]!.pod.metadata.uid, 'api-uid-1');
  });

  it('a bad manifest → a FailedValidation event and an error log; other pods unaffected', async () => {
    const n = updates.msgs.length;
    const path = join(dir(), 'bad.yaml');
    await writeFile(path, manifest('x').replace('  name: x\n', ''));
    const ev = await eventually(() => nodeEvents.msgs.find((e) => e.message.includes('bad.yaml')), { timeoutMs: 10_000 });
    assert.equal(ev.eventType, 'Warning');
    assert.equal(ev.reason, 'FailedValidation');
    assert.equal(ev.message, `Could not process manifest file ${JSON.stringify(path)}: invalid pod: name is needed for the pod`);
    assert.deepEqual(ev.involvedObject, { kind: 'Node', name: NODE, namespace: '', uid: NODE });
    // The line about this file: an earlier look may have caught another file half-written.
    const line = await proc.waitForLine(/^(?=.*"msg":"could not process manifest")(?=.*bad\.yaml).*$/, 5000);
    const rec = JSON.parse(line.input ?? '{}') as Record<string, unknown>;
    assert.equal(rec['file'], path);
    assert.equal(rec['level'], 'error');
    // A good file written after it still gets through; web is never removed.
    await writeFile(join(dir(), 'zz.yaml'), manifest('zz'));
    await eventually(() => summary().at(-1) === 'ADD:zz-node-b.example', { timeoutMs: 10_000 });
    assert.ok(
      updates.msgs.slice(n).every((u) => u.op !== 'REMOVE'),
      summary().join(' '),
    );
    assert.equal(nodeEvents.msgs.filter((e) => e.message.includes('bad.yaml')).length, 1, 'the same error is not re-announced');
  });

  it('SIGTERM exits 0', async () => {
    assert.equal(await proc.stop('SIGTERM', 15_000), 0);
  });
});
