/**
 * pleg in a pod's trace: a relist that serves pokes runs in a `relist` span, child of the first
 * poke's context and linked to the other pokes, and its event publishing happens inside it; a
 * periodic relist asks the runtime in an unsampled context and records a span only on a change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ROOT_CONTEXT, SpanKind, TraceFlags, context, trace, type Context } from '@opentelemetry/api';
import { FakeClock } from '@splitlet/service/testing';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import { GenericPleg, tracedParent } from '../src/pleg/generic-pleg.js';
import { RelistLoop } from '../src/pleg/relist-loop.js';
import { FakeLister, MemoryCache, MemorySink, container, pod, silentLogger, testMetrics } from './fakes.js';
import type { PodLifecycleEvent } from '@splitlet/api';

/** A sink that remembers the span context active at each publish. */
class SpyingSink extends MemorySink {
  readonly activeAtPublish: (string | undefined)[] = [];
  override async publish(event: PodLifecycleEvent): Promise<void> {
    this.activeAtPublish.push(trace.getSpanContext(context.active())?.spanId);
    await super.publish(event);
  }
}

/** A lister that remembers the trace flags of the context it was called in. */
class SpyingLister extends FakeLister {
  readonly flags: (number | undefined)[] = [];
  override async relist() {
    this.flags.push(trace.getSpanContext(context.active())?.traceFlags);
    return super.relist();
  }
}

describe('pleg relist tracing', () => {
  let t: TestTracing;
  before(() => {
    t = createTestTracing({ register: true, serviceName: 'pleg' });
  });
  after(() => t.shutdown());

  function setup() {
    t.reset();
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const lister = new SpyingLister();
    const sink = new SpyingSink();
    const pleg = new GenericPleg({
      lister,
      cache: new MemoryCache(),
      events: sink,
      clock,
      logger: silentLogger(),
      metrics: testMetrics().metrics,
      relistThresholdMs: 180_000,
      tracer: t.tracer,
    });
    return { clock, lister, sink, pleg };
  }

  /** A poke's context: a producer span of some other process, as extracted from NATS headers. */
  function poke(name: string): { ctx: Context; spanId: string; traceId: string } {
    const span = t.tracer.startSpan(name, { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    span.end();
    const sc = span.spanContext();
    return { ctx: trace.setSpanContext(ROOT_CONTEXT, { ...sc, isRemote: true }), spanId: sc.spanId, traceId: sc.traceId };
  }

  it('a poked relist is a child of the first poke, links the others, and publishes inside it', async () => {
    const s = setup();
    const a = poke('cri-adapter syncPod a');
    const b = poke('cri-adapter syncPod b');
    t.reset();
    s.lister.pods = [pod('p', [container('c', 'CONTAINER_RUNNING')])];
    const r = await s.pleg.relist([a.ctx, b.ctx, a.ctx]);
    assert.equal(r.events, 1);
    const [relist, ...rest] = t.spansNamed('relist');
    assert.equal(rest.length, 0);
    assert.ok(relist);
    assert.equal(relist.spanContext().traceId, a.traceId);
    assert.equal(relist.parentSpanContext?.spanId, a.spanId);
    assert.deepEqual(
      relist.links.map((l) => l.context.spanId),
      [b.spanId],
      'the other poke is linked once; the parent is not linked',
    );
    assert.equal(relist.attributes['splitlet.pleg.trigger'], 'poke');
    assert.equal(relist.attributes['splitlet.pleg.pokes'], 3);
    assert.equal(relist.attributes['splitlet.pleg.events'], 1);
    assert.deepEqual(s.sink.activeAtPublish, [relist.spanContext().spanId], 'the event is published inside the relist span');
    assert.equal(s.lister.flags[0], TraceFlags.SAMPLED, 'the runtime request of a poked relist is traced');
  });

  it('a poked relist that finds nothing still shows in the trace; a failed one is an error span', async () => {
    const s = setup();
    const a = poke('syncPod');
    t.reset();
    await s.pleg.relist([a.ctx]);
    assert.equal(t.spansNamed('relist').length, 1);
    s.lister.error = new Error('no responder for sl.n.rpc.runtime.relist');
    t.reset();
    const r = await s.pleg.relist([a.ctx]);
    assert.equal(r.ok, false);
    const [failed] = t.spansNamed('relist');
    assert.equal(failed?.status.code, 2);
    assert.match(failed?.status.message ?? '', /Unable to retrieve pods/);
    assert.equal(failed?.events[0]?.name, 'exception');
  });

  it('a periodic relist asks unsampled, records nothing without a change, and a root span with one', async () => {
    const s = setup();
    await s.pleg.relist();
    assert.equal(t.spans().length, 0);
    assert.equal(s.lister.flags[0], TraceFlags.NONE, 'the runtime request carries an unsampled context');
    s.lister.pods = [pod('p', [container('c', 'CONTAINER_RUNNING')])];
    await s.pleg.relist();
    const [relist] = t.spansNamed('relist');
    assert.ok(relist);
    assert.equal(relist.parentSpanContext, undefined, 'a root span');
    assert.equal(relist.attributes['splitlet.pleg.trigger'], 'period');
    assert.deepEqual(s.sink.activeAtPublish, [relist.spanContext().spanId]);
  });

  it('unsampled pokes neither parent nor link a relist', () => {
    const unsampled = trace.setSpanContext(ROOT_CONTEXT, { traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: TraceFlags.NONE });
    assert.equal(tracedParent([unsampled, ROOT_CONTEXT]), undefined);
    const a = poke('a');
    const got = tracedParent([unsampled, a.ctx]);
    assert.equal(trace.getSpanContext(got!.parent)?.spanId, a.spanId);
    assert.deepEqual(got!.links, []);
  });
});

describe('RelistLoop triggers', () => {
  it('hands each relist the triggers of the pokes it serves, bounded', async () => {
    const clock = new FakeClock(0);
    const ac = new AbortController();
    const got: string[][] = [];
    let release: (() => void) | undefined;
    let block = false;
    const loop = new RelistLoop<string>({
      clock,
      signal: ac.signal,
      periodMs: 1000,
      debounceMs: 10,
      onError: (e) => assert.fail(String(e)),
      relist: async (triggers) => {
        got.push([...triggers]);
        if (block) await new Promise<void>((r) => (release = r));
      },
    });
    loop.start();
    await clock.advanceAsync(0);
    loop.poke('a');
    loop.poke('b');
    loop.poke();
    await clock.advanceAsync(10);
    // During a relist: the pokes go to the relist right after it.
    block = true;
    loop.poke('c');
    await clock.advanceAsync(10);
    loop.poke('d');
    release?.();
    block = false;
    await clock.advanceAsync(0);
    await clock.advanceAsync(0);
    // The periodic one gets none.
    await clock.advanceAsync(1000);
    for (let i = 0; i < 100; i++) loop.poke(`x${i}`);
    await clock.advanceAsync(10);
    assert.deepEqual(got.slice(0, 5), [[], ['a', 'b'], ['c'], ['d'], []]);
    assert.equal(got[5]?.length, 32);
    ac.abort();
  });
});
