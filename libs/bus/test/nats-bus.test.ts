/**
 * NatsBus against a real nats-server, for what the shared contract suite (bus-contract.test.ts)
 * cannot say through the Bus interface: provisioning, raw poison bytes, close() with publishes in
 * flight, metrics, a responder whose connection dies, and spans across processes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { startTestNats, eventually as poll } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { DeadLetter, SpanBatch, type SpanRecord, Streams, Subjects, KubeletError } from '@splitlet/api';
import { connectBus, isBusError, STREAMS } from '../src/index.ts';
import type { BusMetrics, NatsBus } from '../src/index.ts';

const NODE = 'node-a.example.com';
/** Polls until the assertions in `fn` pass. */
function eventually(fn: () => void | Promise<void>): Promise<true> {
  return poll(async () => {
    await fn();
    return true as const;
  });
}

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

const Ping = z.object({ type: z.literal('test.Ping.v1'), n: z.number().int() });

describe('NatsBus', () => {
  let server: NatsServer;
  let bus: NatsBus;
  let other: NatsBus;

  before(async () => {
    const cm = new AsyncLocalStorageContextManager();
    cm.enable();
    context.setGlobalContextManager(cm);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    server = await startTestNats();
    bus = await connectBus({ servers: server.url, process: 'test-a', node: NODE, logger: quiet });
    other = await connectBus({ servers: server.url, process: 'test-b', node: NODE, logger: quiet });
  });

  after(async () => {
    await bus.close();
    await other.close();
    await server.stop();
  });

  test('provisioning is idempotent and creates every stream', async () => {
    const again = await connectBus({ servers: server.url, process: 'test-c', node: NODE, logger: quiet });
    await again.close();
    for (const s of STREAMS) {
      const info = await bus.jsm.streams.info(s.name);
      assert.deepEqual(info.config.subjects, s.subjects);
    }
  });

  test('publishSpans keeps spans as one batch per trace on the trace subjects of the node', async () => {
    const rec: SpanRecord = {
      type: 'kubelet.trace.Span.v1',
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      name: 'syncPod',
      kind: 0,
      service: 'test',
      startUnixNano: '1',
      endUnixNano: '2',
      statusCode: 0,
      attributes: {},
      links: [],
    };
    const rec2: SpanRecord = { ...rec, spanId: 'c'.repeat(16), parentSpanId: rec.spanId, name: 'generateAPIPodStatus' };
    const elsewhere: SpanRecord = { ...rec, traceId: 'd'.repeat(32) };
    await bus.publishSpans([rec, rec2, elsewhere]);
    const got: SpanRecord[] = [];
    await other.readSpans(Subjects.spans(NODE, rec.traceId), (r) => got.push(r));
    assert.deepEqual(got, [rec, rec2]);
    const info = await bus.jsm.streams.info(Streams.spans, { subjects_filter: Subjects.spans(NODE, rec.traceId) });
    assert.equal(
      Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0),
      1,
      'one message for the trace',
    );
    const other2: SpanRecord[] = [];
    await other.readSpans(Subjects.spans(NODE, elsewhere.traceId), (r) => other2.push(r));
    assert.deepEqual(other2, [elsewhere]);
    await assert.rejects(bus.publish(SpanBatch, Subjects.spans(NODE, rec.traceId), { type: 'kubelet.trace.SpanBatch.v1', spans: [rec, elsewhere] }), (e: unknown) =>
      isBusError(e, 'SchemaInvalid'),
    );
  });

  test('close() lets the publishes in flight finish (stored and acknowledged) before it drains', async () => {
    // A process's span-record processor publishes each span as it ends, without waiting; the last
    // spans end just before the bus closes. Here the server is paused, so their acks cannot come
    // before close() begins: a drain at that point would drop them ("connection closed").
    const closing = await connectBus({ servers: server.url, process: 'test-close', node: NODE, logger: quiet, provision: false });
    const traceId = 'c'.repeat(32);
    const failures: string[] = [];
    const sinks: Promise<void>[] = [];
    let closed: Promise<void>;
    process.kill(server.pid, 'SIGSTOP');
    try {
      for (let i = 0; i < 200; i++) {
        const rec: SpanRecord = {
          type: 'kubelet.trace.Span.v1',
          traceId,
          spanId: i.toString(16).padStart(16, '0'),
          name: `step ${i}`,
          kind: 0,
          service: 'test',
          startUnixNano: '1',
          endUnixNano: '2',
          statusCode: 0,
          attributes: {},
          links: [],
        };
        sinks.push(closing.publishSpans([rec]).catch((e: unknown) => void failures.push(String(e))));
      }
      closed = closing.close();
      // Let close() run as far as it goes without the server (a drain would queue its UNSUB now).
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
    await closed;
    await Promise.all(sinks);
    assert.deepEqual([...new Set(failures)], [], 'every publish was acknowledged');
    const got: SpanRecord[] = [];
    await other.readSpans(Subjects.spans(NODE, traceId), (r) => got.push(r));
    assert.equal(got.length, 200);
  });

  test('publish refuses an invalid message; nothing is sent', async () => {
    await assert.rejects(
      bus.publish(Ping, Subjects.pleg(NODE, 'u1'), { type: 'test.Ping.v1', n: 1.5 } as never),
      (e: unknown) => isBusError(e, 'SchemaInvalid') && /n:/.test((e as Error).message),
    );
  });

  test('a malformed message is dead-lettered with the reason and the consumer keeps going', async () => {
    const ac = new AbortController();
    const got: number[] = [];
    const c = await other.consume(Ping, { stream: Streams.pleg, durable: 'test-pleg', filterSubject: Subjects.plegAll(NODE), signal: ac.signal }, async (d) => {
      got.push(d.data.n);
    });
    await bus.js.publish(Subjects.pleg(NODE, 'bad'), '{"type":"test.Ping.v1","n":"not a number"}');
    await bus.js.publish(Subjects.pleg(NODE, 'bad2'), 'not json at all');
    await bus.publish(Ping, Subjects.pleg(NODE, 'good'), { type: 'test.Ping.v1', n: 7 });
    await eventually(() => assert.deepEqual(got, [7]));
    const letters: DeadLetter[] = [];
    await eventually(async () => {
      letters.length = 0;
      await bus.readStream(DeadLetter, Streams.deadLetter, Subjects.deadLetter(NODE, 'test-b'), (d) => letters.push(d));
      assert.equal(letters.length, 2);
    });
    assert.equal(letters[0]!.subject, Subjects.pleg(NODE, 'bad'));
    assert.match(letters[0]!.reason, /does not match its schema: n:/);
    assert.match(letters[1]!.reason, /not valid JSON/);
    assert.equal(letters[1]!.payload, 'not json at all');
    ac.abort();
    await c.done;
  });

  test('a retryable failure is redelivered with backoff; a non-retryable one is dead-lettered', async () => {
    const ac = new AbortController();
    const attempts = new Map<number, number>();
    const c = await other.consume(
      Ping,
      { stream: Streams.status, durable: 'test-status', filterSubject: Subjects.statusAll(NODE), signal: ac.signal, nakBackoffMs: [50], maxDeliver: 5 },
      async (d) => {
        const n = (attempts.get(d.data.n) ?? 0) + 1;
        attempts.set(d.data.n, n);
        if (d.data.n === 1 && n < 3) throw new KubeletError('Unavailable', 'try again', { retryable: true });
        if (d.data.n === 2) throw new KubeletError('Invalid', 'never works');
      },
    );
    await bus.publish(Ping, Subjects.status(NODE, 'p1'), { type: 'test.Ping.v1', n: 1 });
    await bus.publish(Ping, Subjects.status(NODE, 'p2'), { type: 'test.Ping.v1', n: 2 });
    await eventually(() => {
      assert.equal(attempts.get(1), 3);
      assert.equal(attempts.get(2), 1);
    });
    await eventually(async () => {
      const letters: DeadLetter[] = [];
      await bus.readStream(DeadLetter, Streams.deadLetter, Subjects.deadLetter(NODE, 'test-b'), (d) => letters.push(d));
      assert.ok(letters.some((l) => l.subject === Subjects.status(NODE, 'p2') && l.reason === 'never works'));
    });
    ac.abort();
    await c.done;
  });

  test('metrics: deliveries with pending and redeliveries, dead letters, request latency by outcome', async () => {
    const seen = { delivered: [] as [string, string, number, number][], dead: [] as string[], requests: [] as [string, string, number][] };
    const metrics: BusMetrics = {
      delivered: (stream, consumer, count, pending) => seen.delivered.push([stream, consumer, count, pending]),
      deadLettered: (subject) => seen.dead.push(subject),
      requestFinished: (subject, outcome, seconds) => seen.requests.push([subject, outcome, seconds]),
    };
    const measured = await connectBus({ servers: server.url, process: 'test-m', node: NODE, logger: quiet, metrics, provision: false });
    const ac = new AbortController();
    try {
      const subject = Subjects.pleg(NODE, 'metrics');
      let tries = 0;
      const c = await measured.consume(Ping, { stream: Streams.pleg, durable: 'test-metrics', filterSubject: subject, signal: ac.signal, nakBackoffMs: [20] }, async () => {
        if (++tries === 1) throw new KubeletError('Unavailable', 'once', { retryable: true });
      });
      await bus.publish(Ping, subject, { type: 'test.Ping.v1', n: 1 });
      await bus.js.publish(subject, 'not json');
      await eventually(() => assert.equal(seen.delivered.length, 3));
      assert.deepEqual(seen.delivered.map(([s, d, n]) => [s, d, n]).sort(), [
        [Streams.pleg, 'test-metrics', 1],
        [Streams.pleg, 'test-metrics', 1],
        [Streams.pleg, 'test-metrics', 2],
      ]);
      assert.equal(seen.delivered.at(-1)![3], 0, 'nothing is pending after the last delivery');
      assert.deepEqual(seen.dead, ['sl.{node}.pleg.{uid}']);
      await assert.rejects(measured.request(Ping, Ping, Subjects.rpc.volume(NODE, 'unmount'), { type: 'test.Ping.v1', n: 1 }, { timeoutMs: 1000 }));
      assert.equal(seen.requests.length, 1);
      assert.deepEqual(seen.requests[0]!.slice(0, 2), ['sl.{node}.rpc.volume.unmount', 'NoResponders']);
      assert.ok(seen.requests[0]![2] >= 0 && seen.requests[0]![2] < 1);
      ac.abort();
      await c.done;
    } finally {
      ac.abort();
      await measured.close();
    }
  });

  test('request/reply: a slow responder beats progress; a responder that dies is noticed at the idle timeout', async () => {
    const server2 = await connectBus({ servers: server.url, process: 'test-slow', node: NODE, logger: quiet, progressBeatMs: 100 });
    const ac = new AbortController();
    const subject = Subjects.rpc.runtime(NODE, 'syncPod');
    let release: (() => void) | undefined;
    server2.serve(
      subject,
      Ping,
      Ping,
      async (req) => {
        if (req.n === 1) await new Promise((r) => setTimeout(r, 3000));
        else await new Promise<void>((r) => (release = r));
        return { type: 'test.Ping.v1' as const, n: req.n };
      },
      { queue: 'slow', signal: ac.signal },
    );
    await server2.nc.flush();
    // 3 s of work against a 1.5 s idle timeout (15 beats of slack for a loaded machine): the beats keep the request alive.
    const rep = await bus.request(Ping, Ping, subject, { type: 'test.Ping.v1', n: 1 }, { timeoutMs: 30_000, idleTimeoutMs: 1500 });
    assert.equal(rep.n, 1);
    // The responder dies mid-request: the requester knows within the idle timeout, not the deadline.
    const started = Date.now();
    const pending = bus.request(Ping, Ping, subject, { type: 'test.Ping.v1', n: 2 }, { timeoutMs: 60_000, idleTimeoutMs: 1500 });
    await new Promise((r) => setTimeout(r, 150));
    await server2.nc.close();
    await assert.rejects(pending, (e: unknown) => isBusError(e, 'Timeout') && /went silent/.test((e as Error).message));
    assert.ok(Date.now() - started < 30_000, 'noticed at the idle timeout, long before the 60 s deadline');
    release?.();
    ac.abort();
  });

  test('trace context travels in the headers of a published message', async () => {
    const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    const tracer = provider.getTracer('test');
    const ac = new AbortController();
    let consumerTrace: string | undefined;
    const c = await other.consume(Ping, { stream: Streams.events, durable: 'test-events', filterSubject: Subjects.eventsAll(NODE), signal: ac.signal }, async () => {
      consumerTrace = trace.getSpan(context.active())?.spanContext().traceId;
    });
    const root = tracer.startSpan('root');
    await context.with(trace.setSpan(context.active(), root), () => bus.publish(Ping, Subjects.events(NODE, 'u'), { type: 'test.Ping.v1', n: 1 }));
    root.end();
    await eventually(() => assert.equal(consumerTrace, root.spanContext().traceId));
    ac.abort();
    await c.done;
    await provider.forceFlush();
    const names = exporter.getFinishedSpans().map((s) => s.name);
    assert.ok(names.includes('send sl.{node}.events.{uid}'));
    assert.ok(names.includes('process sl.{node}.events.{uid}'));
    trace.disable();
  });
});
