import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ROOT_CONTEXT, propagation, trace } from '@opentelemetry/api';
import { currentTraceIds, extractContext, injectContext, linkFromCarrier, runUnsampled, unsampledContext, withSpan } from '../src/index.js';
import { createTestTracing } from '../src/testing/index.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('trace-context carriers', () => {
  // Not registered globally: the helpers must work with explicit contexts alone.
  const t = createTestTracing();
  after(() => t.shutdown());

  it('round-trips a span context and baggage through a plain object', () => {
    const span = t.tracer.startSpan('producer');
    let ctx = trace.setSpan(ROOT_CONTEXT, span);
    ctx = propagation.setBaggage(ctx, propagation.createBaggage({ 'k8s.pod.uid': { value: 'u1' } }));
    const carrier = injectContext(ctx);
    span.end();
    assert.match(carrier['traceparent'] ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.equal(carrier['baggage'], 'k8s.pod.uid=u1');

    const back = extractContext(carrier);
    const sc = trace.getSpanContext(back);
    assert.equal(sc?.traceId, span.spanContext().traceId);
    assert.equal(sc?.spanId, span.spanContext().spanId);
    assert.equal(sc?.isRemote, true);
    assert.equal(propagation.getBaggage(back)?.getEntry('k8s.pod.uid')?.value, 'u1');
  });

  it('injects nothing without a span, and extracts no span from junk', () => {
    assert.deepEqual(injectContext(ROOT_CONTEXT), {});
    for (const carrier of [undefined, {}, { traceparent: '' }, { traceparent: 'garbage' }]) {
      assert.equal(trace.getSpanContext(extractContext(carrier)), undefined);
      assert.equal(linkFromCarrier(carrier), undefined);
    }
  });

  it('looks header names up case-insensitively', () => {
    const sc = trace.getSpanContext(extractContext({ TraceParent: TRACEPARENT }));
    assert.equal(sc?.traceId, '0af7651916cd43dd8448eb211c80319c');
  });

  it('linkFromCarrier points at the carried span', () => {
    const link = linkFromCarrier({ traceparent: TRACEPARENT });
    assert.equal(link?.context.traceId, '0af7651916cd43dd8448eb211c80319c');
    assert.equal(link?.context.spanId, 'b7ad6b7169203331');
  });

  it('currentTraceIds reads an explicit context', () => {
    assert.equal(currentTraceIds(ROOT_CONTEXT), undefined);
    assert.deepEqual(currentTraceIds(extractContext({ traceparent: TRACEPARENT })), {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
    });
  });
});

describe('trace-context with the active context', () => {
  it('injectContext() and currentTraceIds() default to the active span', async () => {
    const t = createTestTracing({ register: true });
    try {
      assert.equal(currentTraceIds(), undefined);
      await withSpan(t.tracer, 'op', {}, async (span) => {
        await Promise.resolve();
        assert.deepEqual(currentTraceIds(), { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId });
        assert.ok(injectContext()['traceparent']?.includes(span.spanContext().spanId));
      });
    } finally {
      await t.shutdown();
    }
  });
});

describe('unsampled contexts', () => {
  it('record no span under the default sampler and propagate flag 00', async () => {
    const t = createTestTracing({ register: true });
    try {
      const carrier = await runUnsampled(async () => {
        await withSpan(t.tracer, 'periodic', {}, async () => Promise.resolve());
        return injectContext();
      });
      assert.equal(t.spans().length, 0);
      assert.match(carrier['traceparent'] ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
      // A downstream process with a parent-based sampler records nothing under it either.
      await withSpan(t.tracer, 'callee', { parent: extractContext(carrier) }, async () => Promise.resolve());
      assert.equal(t.spans().length, 0);
      const sc = trace.getSpanContext(unsampledContext(ROOT_CONTEXT));
      assert.ok(sc !== undefined && trace.isSpanContextValid(sc));
      assert.notEqual(sc.traceId, trace.getSpanContext(unsampledContext(ROOT_CONTEXT))?.traceId);
    } finally {
      await t.shutdown();
    }
  });
});
