import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { KubeletError } from '@splitlet/api';
import { extractContext, injectContext, withSpan } from '../src/index.js';
import { createTestTracing } from '../src/testing/index.js';

describe('withSpan', () => {
  const t = createTestTracing({ register: true });
  beforeEach(() => t.reset());
  after(() => t.shutdown());

  it('ends the span on success and returns the value', async () => {
    const v = await withSpan(t.tracer, 'syncPod', { attributes: { 'k8s.pod.uid': 'u1' }, kind: SpanKind.CONSUMER }, async (span) => {
      assert.equal(span.isRecording(), true);
      assert.equal(t.spans().length, 0, 'not ended before fn settles');
      return 42;
    });
    assert.equal(v, 42);
    const [s] = t.spans();
    assert.equal(s?.name, 'syncPod');
    assert.equal(s?.kind, SpanKind.CONSUMER);
    assert.equal(s?.attributes['k8s.pod.uid'], 'u1');
    assert.equal(s?.status.code, SpanStatusCode.UNSET);
    assert.equal(s?.ended, true);
  });

  it('records a rejection, sets ERROR with the message, ends, and rethrows the same error', async () => {
    const boom = new KubeletError('DeadlineExceeded', 'RunPodSandbox timed out', { retryable: true });
    await assert.rejects(
      withSpan(t.tracer, 'runtime.v1.RuntimeService/RunPodSandbox', {}, async () => {
        await Promise.resolve();
        throw boom;
      }),
      (e) => e === boom,
    );
    const [s] = t.spans();
    assert.equal(s?.status.code, SpanStatusCode.ERROR);
    assert.equal(s?.status.message, 'RunPodSandbox timed out');
    assert.equal(s?.attributes['error.type'], 'DeadlineExceeded');
    const ev = s?.events.find((e) => e.name === 'exception');
    assert.equal(ev?.attributes?.['exception.message'], 'RunPodSandbox timed out');
    assert.equal(t.spans().length, 1);
  });

  it('handles a synchronous throw and non-Error values', async () => {
    await assert.rejects(
      withSpan(t.tracer, 'x', {}, () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the case under test: a thrown non-Error value
        throw 'plain string';
      }),
      (e) => e === 'plain string',
    );
    const [s] = t.spans();
    assert.equal(s?.status.code, SpanStatusCode.ERROR);
    assert.equal(s?.status.message, 'plain string');
  });

  it('parents nested spans on the active span, and on an explicit parent context', async () => {
    let carrier: Record<string, string> = {};
    await withSpan(t.tracer, 'outer', {}, async () => {
      await withSpan(t.tracer, 'inner', {}, async () => {
        carrier = injectContext();
      });
    });
    const outer = t.spansNamed('outer')[0];
    const inner = t.spansNamed('inner')[0];
    assert.equal(inner?.parentSpanContext?.spanId, outer?.spanContext().spanId);
    assert.equal(inner?.spanContext().traceId, outer?.spanContext().traceId);

    // A consumer in "another process": parent comes from the carrier.
    await withSpan(t.tracer, 'consumer', { parent: extractContext(carrier), kind: SpanKind.CONSUMER }, async () => {});
    const consumer = t.spansNamed('consumer')[0];
    assert.equal(consumer?.spanContext().traceId, outer?.spanContext().traceId);
    assert.equal(consumer?.parentSpanContext?.spanId, inner?.spanContext().spanId);
    assert.equal(trace.getActiveSpan(), undefined, 'no span leaks into the caller context');
  });

  it('passes links through', async () => {
    const link = { context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 } };
    await withSpan(t.tracer, 'redelivered', { links: [link] }, async () => {});
    assert.equal(t.spans()[0]?.links[0]?.context.spanId, 'b'.repeat(16));
  });
});
