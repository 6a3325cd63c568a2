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
  it('hands every finished span to the sink, with tracing suppressed inside it, and flushes async sinks', async () => {
    const records: SpanRecord[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const processor = createSpanRecordProcessor({
      sink: async (r) => {
        // A span created by the sink (e.g. the bus's publish span) must not be recorded.
        t.tracer.startSpan('publish SL_SPANS').end();
        await gate;
        records.push(r);
      },
    });
    const t = createTestTracing({ serviceName: 'pleg', register: true, spanProcessors: [processor] });
    try {
      await withSpan(t.tracer, 'relist', {}, async () => {});
      let flushed = false;
      const flushing = processor.forceFlush().then(() => (flushed = true));
      await new Promise((r) => setImmediate(r));
      assert.equal(flushed, false, 'forceFlush waits for the pending sink');
      release();
      await flushing;
      assert.deepEqual(records.map((r) => [r.name, r.service]), [['relist', 'pleg']]);
      assert.deepEqual(t.spans().map((s) => s.name), ['relist'], 'the sink span was suppressed');
    } finally {
      await t.shutdown();
    }
  });

  it('reports sink failures to onError and keeps going; drops spans after shutdown', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const processor = createSpanRecordProcessor({
      service: 's',
      sink: (r) => {
        calls++;
        if (r.name === 'sync-fail') throw new Error('sync boom');
        if (r.name === 'async-fail') return Promise.reject(new Error('async boom'));
        return undefined;
      },
      onError: (e) => errors.push(e),
    });
    const t = createTestTracing({ spanProcessors: [processor] });
    t.tracer.startSpan('sync-fail').end();
    t.tracer.startSpan('async-fail').end();
    t.tracer.startSpan('fine').end();
    await processor.forceFlush();
    assert.equal(calls, 3);
    assert.deepEqual(errors.map((e) => (e as Error).message).sort(), ['async boom', 'sync boom']);
    await t.shutdown();
    t.tracer.startSpan('after').end();
    assert.equal(calls, 3);
  });
});
