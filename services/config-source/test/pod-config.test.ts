import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import type { BoundPod, KubeEvent, PodUpdate } from '@splitlet/api';
import type { Clock } from '@splitlet/service';
import { extractContext } from '@splitlet/telemetry';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import { PodConfig } from '../src/pod-config/pod-config.js';
import type { ListingChanges, ManifestError, SourceListing, SourcedPod } from '../src/sources/listing.js';
import { decodeManifest } from '../src/sources/manifest-decoder.js';
import { manifest, memoryLogger } from './helpers.js';

const NODE = 'node-a.example';

/** Timers fire on the next turn of the event loop: retries run without waiting for their backoff. */
const instantClock: Clock = {
  now: () => 1_700_000_000_000,
  setTimeout: (fn) => setImmediate(fn),
  clearTimeout: (h) => clearImmediate(h as NodeJS.Immediate),
};

function pods(path: string, text: string): BoundPod[] {
  const r = decodeManifest(text, NODE, { kind: 'file', path });
  assert.ok(r.ok, !r.ok ? r.message : '');
  return r.pods;
}

function fileListing(files: Record<string, string>, errors: ManifestError[] = []): SourceListing {
  return { source: 'file', pods: Object.entries(files).flatMap(([path, text]) => pods(path, text).map((pod) => ({ pod, origin: path }))), errors };
}

describe('PodConfig', () => {
  let tracing: TestTracing;
  let published: { update: PodUpdate; ctx: Context; msgID: string }[];
  let events: { event: KubeEvent; key: string }[];
  let failNext: number;
  let attempts: string[];
  let log: ReturnType<typeof memoryLogger>;
  let pc: PodConfig;
  let ac: AbortController;

  beforeEach(() => {
    tracing = createTestTracing();
    published = [];
    events = [];
    failNext = 0;
    attempts = [];
    log = memoryLogger();
    ac = new AbortController();
    pc = new PodConfig({
      nodeName: NODE,
      sources: ['file', 'http'],
      publisher: {
        publish: async (update, ctx, msgID) => {
          attempts.push(msgID);
          if (failNext > 0) {
            failNext--;
            throw new Error('nats: timeout');
          }
          published.push({ update: structuredClone(update), ctx, msgID });
        },
      },
      events: { record: async (event, key) => void events.push({ event, key }) },
      clock: instantClock,
      logger: log.logger,
      tracer: tracing.tracer,
      instanceId: 'inst',
      signal: ac.signal,
    });
  });
  afterEach(async () => {
    ac.abort();
    await tracing.shutdown();
  });

  const ops = (): string[] => published.map((p) => `${p.update.op}:${p.update.items.map((i) => i.pod.metadata.name).join(',')}`);

  it('a first empty SET publishes the empty ADD ("source ready") with every configured source', async () => {
    await pc.apply({ source: 'file', pods: [], errors: [] });
    assert.deepEqual(ops(), ['ADD:']);
    assert.equal(published[0]!.update.source, 'file');
    assert.deepEqual(published[0]!.update.sources, ['file', 'http']);
    assert.equal(pc.seenAllSources(), false);
    await pc.apply({ source: 'http', pods: [], errors: [] });
    assert.equal(pc.seenAllSources(), true);
    await pc.apply({ source: 'file', pods: [], errors: [] });
    assert.equal(published.length, 2, 'a later empty SET publishes nothing');
  });

  it('ADD → UPDATE → REMOVE with one root span per pod episode, carriers in items, links to creation', async () => {
    const v1 = manifest('web', 'nginx:1.27', '  uid: web-uid\n');
    const v2 = manifest('web', 'nginx:1.28', '  uid: web-uid\n');
    await pc.apply(fileListing({ '/m/web.yaml': v1 }));
    await pc.apply(fileListing({ '/m/web.yaml': v1 }));
    await pc.apply(fileListing({ '/m/web.yaml': v2 }));
    await pc.apply(fileListing({}));
    assert.deepEqual(ops(), ['ADD:web-node-a.example', 'UPDATE:web-node-a.example', 'REMOVE:web-node-a.example']);

    const [add, update, remove] = published;
    const addSpan = tracing.spansNamed('config.add')[0]!;
    assert.equal(addSpan.kind, SpanKind.INTERNAL);
    assert.equal(addSpan.parentSpanContext, undefined, 'a new root span (a new trace per episode)');
    assert.deepEqual(
      { ...addSpan.attributes },
      {
        'k8s.pod.uid': 'web-uid',
        'k8s.pod.name': 'web-node-a.example',
        'k8s.namespace.name': 'default',
        'k8s.pod.update_type': 'ADD',
        'k8s.node.name': NODE,
        'splitlet.config.source': 'file',
        'splitlet.config.path': '/m/web.yaml',
      },
    );
    // The item carries the span's context, and the message is published inside it.
    const carried = trace.getSpanContext(extractContext(add!.update.items[0]!.trace));
    assert.equal(carried?.spanId, addSpan.spanContext().spanId);
    assert.equal(trace.getSpanContext(add!.ctx)?.spanId, addSpan.spanContext().spanId);
    assert.equal(add!.update.items[0]!.pod.metadata.annotations?.['kubernetes.io/config.seen'] !== undefined, true);

    const updateSpan = tracing.spansNamed('config.update')[0]!;
    assert.notEqual(updateSpan.spanContext().traceId, addSpan.spanContext().traceId);
    assert.deepEqual(
      updateSpan.links.map((l) => l.context.spanId),
      [addSpan.spanContext().spanId],
    );
    assert.equal(update!.update.items[0]!.pod.spec.containers[0]!.image, 'nginx:1.28');

    const removeSpan = tracing.spansNamed('config.remove')[0]!;
    assert.deepEqual(
      removeSpan.links.map((l) => l.context.spanId),
      [addSpan.spanContext().spanId],
    );
    assert.equal(removeSpan.attributes['splitlet.config.path'], '/m/web.yaml');
    assert.ok(remove!.update.items[0]!.trace?.['traceparent']);

    // Coming back is a new creation, not linked to the old one.
    await pc.apply(fileListing({ '/m/web.yaml': v1 }));
    assert.deepEqual(tracing.spansNamed('config.add')[1]!.links, []);
  });

  it("a mirror pod's status change is not published (sync-loop's HandlePodReconcile ignores it); another API pod's RECONCILE is", async () => {
    const regular = pods('/m/web.yaml', manifest('web', 'nginx:1.27', '  uid: web-uid\n'))[0]!;
    const mirror = pods('/m/static.yaml', manifest('static', 'nginx:1.27', '  uid: mirror-uid\n'))[0]!;
    mirror.metadata.annotations = { ...mirror.metadata.annotations, 'kubernetes.io/config.mirror': 'mirror-uid' };
    const api = (...listed: BoundPod[]): SourceListing => ({ source: 'api', pods: listed.map((pod) => ({ pod, origin: 'api' })), errors: [] });
    const withPhase = (p: BoundPod, phase: 'Running' | 'Succeeded'): BoundPod => ({ ...structuredClone(p), status: { phase } });
    await pc.apply(api(regular, mirror));
    await pc.apply(api(withPhase(regular, 'Running'), withPhase(mirror, 'Running')));
    await pc.apply(api(withPhase(regular, 'Running'), withPhase(mirror, 'Succeeded')));
    assert.deepEqual(ops(), ['ADD:web-node-a.example,static-node-a.example', 'RECONCILE:web-node-a.example']);
    assert.deepEqual(
      published.map((p) => p.update.origin?.seq),
      [1, 2],
      'nothing published, no sequence number used',
    );
    // The mirror pod's other operations are published: here its update with the newest status.
    const relabelled = withPhase(mirror, 'Succeeded');
    relabelled.metadata.labels = { app: 'static' };
    await pc.apply(api(withPhase(regular, 'Running'), relabelled));
    assert.deepEqual(ops().slice(2), ['UPDATE:static-node-a.example']);
    assert.equal(published[2]!.update.items[0]!.pod.status?.phase, 'Succeeded');
  });

  it('editing a manifest without a uid is REMOVE then ADD (the UID is a content hash)', async () => {
    await pc.apply(fileListing({ '/m/a.yaml': manifest('a') }));
    await pc.apply(fileListing({ '/m/a.yaml': manifest('a', 'busybox:1.37') }));
    assert.deepEqual(ops(), ['ADD:a-node-a.example', 'REMOVE:a-node-a.example', 'ADD:a-node-a.example']);
    assert.notEqual(published[1]!.update.items[0]!.pod.metadata.uid, published[2]!.update.items[0]!.pod.metadata.uid);
  });

  it('manifest errors: logged on every look, one Node event per distinct error', async () => {
    const err = (message: string): ManifestError => ({ kind: 'file', location: '/m/bad.yaml', message });
    await pc.apply(fileListing({}, [err('invalid pod: name is needed for the pod')]));
    await pc.apply(fileListing({}, [err('invalid pod: name is needed for the pod')]));
    assert.equal(events.length, 1);
    const { event, key } = events[0]!;
    assert.equal(key, 'node-a_example');
    assert.equal(event.eventType, 'Warning');
    assert.equal(event.reason, 'FailedValidation');
    assert.equal(event.message, 'Could not process manifest file "/m/bad.yaml": invalid pod: name is needed for the pod');
    assert.deepEqual(event.involvedObject, { kind: 'Node', name: NODE, namespace: '', uid: NODE });
    assert.deepEqual(event.source, { component: 'kubelet', host: NODE });
    const logs = log.records.filter((r) => r['msg'] === 'could not process manifest');
    assert.equal(logs.length, 2);
    assert.equal(logs[0]!['file'], '/m/bad.yaml');
    assert.equal(logs[0]!['level'], 'error');
    await pc.apply(fileListing({}, [err('error converting YAML to JSON: x')]));
    assert.equal(events.length, 2);
    await pc.apply(fileListing({}));
    await pc.apply(fileListing({}, [err('error converting YAML to JSON: x')]));
    assert.equal(events.length, 3, 'a fixed-then-broken file reports again');
  });

  it('duplicate full names in a source: the second pod is dropped with the kubelet FailedValidation event', async () => {
    await pc.apply(fileListing({ '/m/a.yaml': manifest('dup'), '/m/b.yaml': manifest('dup') }));
    assert.deepEqual(ops(), ['ADD:dup-node-a.example']);
    assert.equal(published[0]!.update.items[0]!.pod.metadata.annotations?.['kubernetes.io/config.hash'], pods('/m/a.yaml', manifest('dup'))[0]!.metadata.uid);
    assert.equal(events.length, 1);
    const dropped = pods('/m/b.yaml', manifest('dup'))[0]!;
    assert.equal(events[0]!.key, dropped.metadata.uid);
    assert.equal(
      events[0]!.event.message,
      'Error validating pod dup-node-a.example_default(' + dropped.metadata.uid + ') from file due to duplicate pod name "dup-node-a.example", ignoring',
    );
    assert.deepEqual(events[0]!.event.involvedObject, { kind: 'Pod', name: 'dup-node-a.example', namespace: 'default', uid: dropped.metadata.uid });
    await pc.apply(fileListing({ '/m/a.yaml': manifest('dup'), '/m/b.yaml': manifest('dup') }));
    assert.equal(events.length, 1, 'not repeated on every relist');
  });

  it('REMOVE is published before ADD when one SET replaces a pod', async () => {
    await pc.apply(fileListing({ '/m/a.yaml': manifest('a') }));
    await pc.apply(fileListing({ '/m/b.yaml': manifest('b') }));
    assert.deepEqual(ops(), ['ADD:a-node-a.example', 'REMOVE:a-node-a.example', 'ADD:b-node-a.example']);
  });

  it('a failed publish is retried with the same msgID and origin until acknowledged; order is kept', async () => {
    failNext = 2;
    const first = pc.apply(fileListing({ '/m/a.yaml': manifest('a') }));
    const second = pc.apply(fileListing({ '/m/a.yaml': manifest('a'), '/m/b.yaml': manifest('b') }));
    await Promise.all([first, second]);
    assert.deepEqual(attempts, ['inst-1', 'inst-1', 'inst-1', 'inst-2']);
    assert.deepEqual(ops(), ['ADD:a-node-a.example', 'ADD:b-node-a.example']);
    // sync-loop tells a replay by the origin: the publisher and its count of updates, in publish order.
    assert.deepEqual(
      published.map((p) => p.update.origin),
      [
        { publisher: 'inst', seq: 1 },
        { publisher: 'inst', seq: 2 },
      ],
    );
    assert.equal(log.records.filter((r) => r['msg'] === 'publishing a pod update failed, retrying').length, 2);
  });

  it('a publish interrupted by shutdown rejects and ends the spans with an error', async () => {
    failNext = 1_000_000;
    const p = pc.apply(fileListing({ '/m/a.yaml': manifest('a') }));
    while (attempts.length < 3) await new Promise((r) => setImmediate(r));
    ac.abort();
    await assert.rejects(p);
    assert.equal(tracing.spansNamed('config.add')[0]?.status.code, SpanStatusCode.ERROR);
  });
});

describe('PodConfig with listing changes (the apiserver source)', () => {
  /** A PodConfig of source `api` and all it published, recorded and span-tagged. */
  function recorded(tracing: TestTracing): { pc: PodConfig; out: unknown[]; ac: AbortController } {
    const out: unknown[] = [];
    const ac = new AbortController();
    const pc = new PodConfig({
      nodeName: NODE,
      sources: ['api'],
      publisher: { publish: async (update) => void out.push({ op: update.op, source: update.source, sources: update.sources, pods: update.items.map((i) => i.pod) }) },
      events: { record: async (event, key) => void out.push({ event, key }) },
      metrics: { manifestError: () => undefined, setPods: (source, n) => void out.push({ setPods: source, n }) },
      clock: instantClock,
      logger: memoryLogger().logger,
      tracer: tracing.tracer,
      instanceId: 'inst',
      signal: ac.signal,
    });
    return { pc, out, ac };
  }

  it('publishes, records and counts exactly what the full listings give, also across a rejected duplicate', async () => {
    const tracing = createTestTracing();
    const withChanges = recorded(tracing);
    const whole = recorded(tracing);
    const api = (name: string, image: string, status?: BoundPod['status']): SourcedPod => {
      const [pod] = pods(`/api/${name}`, manifest(name, image, `  uid: ${name}-uid\n`));
      return { pod: { ...pod!, ...(status !== undefined ? { status } : {}) }, origin: `api:default/${name}` };
    };
    // [listing, changes since the previous one]; undefined changes: a full (re)list.
    const a1 = api('a', 'img:1');
    const b1 = api('b', 'img:1');
    const a2 = api('a', 'img:2');
    const b2 = api('b', 'img:1', { phase: 'Running' });
    const dup = { pod: { ...api('b', 'img:1').pod, metadata: { ...b1.pod.metadata, uid: 'dup-uid' } }, origin: 'api:other/b' };
    const c1 = api('c', 'img:1');
    const steps: [SourcedPod[], ListingChanges | undefined][] = [
      [[], undefined],
      [[a1], { upserted: [a1], removed: [] }],
      [[a1, b1], { upserted: [b1], removed: [] }],
      [[a2, b1], { upserted: [a2], removed: [] }],
      [[a2, b2], { upserted: [b2], removed: [] }],
      [[a2, b2, dup], { upserted: [dup], removed: [] }],
      [[a2, b2, dup, c1], { upserted: [c1], removed: [] }],
      [[b2, dup, c1], { upserted: [], removed: ['a-uid'] }],
      [[b2, c1], { upserted: [], removed: ['dup-uid'] }],
      [[b2, c1], undefined],
      [[c1], { upserted: [], removed: ['b-uid'] }],
    ];
    for (const [listing, changes] of steps) {
      await withChanges.pc.apply({ source: 'api', pods: listing, errors: [], ...(changes !== undefined ? { changes } : {}) });
      await whole.pc.apply({ source: 'api', pods: listing, errors: [] });
    }
    assert.deepEqual(withChanges.out, whole.out);
    assert.ok(withChanges.out.some((o) => (o as { event?: KubeEvent }).event?.reason === 'FailedValidation'));
    const paths = (name: string): unknown[] => tracing.spansNamed(name).map((s) => s.attributes['splitlet.config.path']);
    assert.deepEqual(paths('config.add').sort(), ['api:default/a', 'api:default/a', 'api:default/b', 'api:default/b', 'api:default/c', 'api:default/c']);
    assert.equal(paths('config.remove').length % 2, 0);
    withChanges.ac.abort();
    whole.ac.abort();
    await tracing.shutdown();
  });
});
