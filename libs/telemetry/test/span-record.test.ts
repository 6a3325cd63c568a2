import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { SpanRecord } from '@splitlet/api';
import { createSpanRecordProcessor, spanToRecord, withSpan } from '../src/index.js';
import { createTestTracing } from '../src/testing/index.js';

describe('spanToRecord', () => {
  const t = createTestTracing({ serviceName: 'cri-adapter', register: true });
  beforeEach(() => t.reset());
  after(() => t.shutdown());

  it('produces a valid kubelet.trace.Span.v1 record', async () => {
    const link = { context: { traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), traceFlags: 1 } };
    await withSpan(t.tracer, 'parent', {}, async () => {
      await assert.rejects(
        withSpan(
          t.tracer,
          'runtime.v1.RuntimeService/CreateContainer',
          { kind: SpanKind.CLIENT, links: [link], attributes: { 'k8s.pod.uid': 'u1', attempt: 2, ok: false, tags: ['a', 'b'], token: 'x' } },
          async () => {
            throw new Error('image not present');
          },
        ),
      );
    });
    const span = t.spansNamed('runtime.v1.RuntimeService/CreateContainer')[0];
    const parent = t.spansNamed('parent')[0];
    assert.ok(span && parent);
    const r = SpanRecord.parse(spanToRecord(span));
    assert.equal(r.type, 'kubelet.trace.Span.v1');
    assert.equal(r.service, 'cri-adapter');
    assert.equal(r.kind, SpanKind.CLIENT);
    assert.equal(r.traceId, parent.spanContext().traceId);
    assert.equal(r.parentSpanId, parent.spanContext().spanId);
    assert.equal(r.statusCode, SpanStatusCode.ERROR);
    assert.equal(r.statusMessage, 'image not present');
    assert.deepEqual(r.attributes['tags'], '["a","b"]');
    assert.equal(r.attributes['attempt'], 2);
    assert.equal(r.attributes['ok'], false);
    assert.equal(r.attributes['token'], '[REDACTED]');
    assert.deepEqual(r.links, [{ traceId: 'c'.repeat(32), spanId: 'd'.repeat(16) }]);
    assert.equal(r.events?.[0]?.name, 'exception');
    // Exact nanoseconds: strings, end >= start, matching the HrTime.
    const start = BigInt(r.startUnixNano);
    assert.equal(start, BigInt(span.startTime[0]) * 1_000_000_000n + BigInt(span.startTime[1]));
    assert.ok(BigInt(r.endUnixNano) >= start);
    const root = SpanRecord.parse(spanToRecord(parent, 'override'));
    assert.equal(root.parentSpanId, undefined);
    assert.equal(root.statusMessage, undefined);
    assert.equal(root.service, 'override');
  });
});

describe('createSpanRecordProcessor', () => {
  it('hands finished spans to the sink in a batch, with tracing suppressed inside it, and flushes async sinks', async () => {
    const batches: SpanRecord[][] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const processor = createSpanRecordProcessor({
      sink: async (batch) => {
        // A span created by the sink (e.g. the bus's publish span) must not be recorded.
        t.tracer.startSpan('publish SL_SPANS').end();
        await gate;
        batches.push(batch);
      },
    });
    const t = createTestTracing({ serviceName: 'pleg', register: true, spanProcessors: [processor] });
    try {
      await withSpan(t.tracer, 'relist', {}, async () => {
        t.tracer.startSpan('ListContainers').end();
      });
      let flushed = false;
      const flushing = processor.forceFlush().then(() => (flushed = true));
      await new Promise((r) => setImmediate(r));
      assert.equal(flushed, false, 'forceFlush waits for the pending sink');
      release();
      await flushing;
      assert.deepEqual(
        batches.map((b) => b.map((r) => [r.name, r.service])),
        [
          [
            ['ListContainers', 'pleg'],
            ['relist', 'pleg'],
          ],
        ],
        'one batch of both spans',
      );
      assert.deepEqual(
        t
          .spans()
          .map((s) => s.name)
          .sort(),
        ['ListContainers', 'relist'],
        'the sink span was suppressed',
      );
    } finally {
      await t.shutdown();
    }
  });

  it('sends a batch batchDelayMs after its first span, or at once when it reaches maxBatch', async () => {
    const batches: string[][] = [];
    const processor = createSpanRecordProcessor({ service: 's', batchDelayMs: 30, maxBatch: 3, sink: (b) => void batches.push(b.map((r) => r.name)) });
    const t = createTestTracing({ spanProcessors: [processor] });
    try {
      for (const n of ['a', 'b', 'c', 'd']) t.tracer.startSpan(n).end();
      assert.deepEqual(batches, [['a', 'b', 'c']], 'the full batch went at once');
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(batches, [['a', 'b', 'c'], ['d']], 'the rest after the delay, without a flush');
    } finally {
      await t.shutdown();
    }
  });

  it('reports sink failures to onError and keeps going; shutdown sends what is buffered, then drops spans', async () => {
    const errors: unknown[] = [];
    const seen: string[] = [];
    const processor = createSpanRecordProcessor({
      service: 's',
      maxBatch: 1,
      sink: ([r]) => {
        seen.push(r!.name);
        if (r!.name === 'sync-fail') throw new Error('sync boom');
        if (r!.name === 'async-fail') return Promise.reject(new Error('async boom'));
        return undefined;
      },
      onError: (e) => errors.push(e),
    });
    const t = createTestTracing({ spanProcessors: [processor] });
    t.tracer.startSpan('sync-fail').end();
    t.tracer.startSpan('async-fail').end();
    t.tracer.startSpan('fine').end();
    await processor.forceFlush();
    assert.deepEqual(seen, ['sync-fail', 'async-fail', 'fine']);
    assert.deepEqual(errors.map((e) => (e as Error).message).sort(), ['async boom', 'sync boom']);
    await t.shutdown();
    t.tracer.startSpan('after').end();
    assert.deepEqual(seen, ['sync-fail', 'async-fail', 'fine']);

    const buffered: string[] = [];
    const lazy = createSpanRecordProcessor({ service: 's', batchDelayMs: 60_000, sink: (b) => void buffered.push(...b.map((r) => r.name)) });
    const t2 = createTestTracing({ spanProcessors: [lazy] });
    t2.tracer.startSpan('last').end();
    await t2.shutdown();
    assert.deepEqual(buffered, ['last'], 'shutdown flushed the waiting batch');
  });
});
