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
import type { DesiredPod, PodLifecycleEvent } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { extractContext, injectContext } from '@splitlet/telemetry';
import type { DesiredPodReader } from '../src/ports.js';

/** A sink that remembers the span context active at each publish. */
class SpyingSink extends MemorySink {
  readonly activeAtPublish: (string | undefined)[] = [];
  override async publish(events: readonly PodLifecycleEvent[]): Promise<void> {
    for (const _ of events) this.activeAtPublish.push(trace.getSpanContext(context.active())?.spanId);
    await super.publish(events);
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

describe('pleg: a container death begins a new episode (restart trace)', () => {
  let t: TestTracing;
  before(() => {
    t = createTestTracing({ register: true, serviceName: 'pleg' });
  });
  after(() => t.shutdown());

  class MemoryDesired implements DesiredPodReader {
    readonly pods = new Map<string, DesiredPod>();
    fail = false;
    async get(uid: string): Promise<DesiredPod | undefined> {
      if (this.fail) throw new Error('kv unavailable');
      return this.pods.get(uid);
    }
  }

  /** A finished span of another process, as a remote context and a carrier. */
  function remote(name: string) {
    const span = t.tracer.startSpan(name, {}, ROOT_CONTEXT);
    span.end();
    const sc = span.spanContext();
    return { sc, ctx: trace.setSpanContext(ROOT_CONTEXT, { ...sc, isRemote: true }), carrier: injectContext(trace.setSpan(ROOT_CONTEXT, span)) };
  }

  function setup() {
    t.reset();
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const lister = new FakeLister();
    const sink = new SpyingSink();
    const cache = new MemoryCache();
    const desired = new MemoryDesired();
    const pleg = new GenericPleg({
      lister,
      cache,
      events: sink,
      clock,
      logger: silentLogger(),
      metrics: testMetrics().metrics,
      relistThresholdMs: 180_000,
      tracer: t.tracer,
      desired,
    });
    const creation = remote('config.add');
    const want = (extra: Partial<DesiredPod> = {}, podOverrides: Parameters<typeof aPod>[0] = {}): void => {
      desired.pods.set('p', {
        type: 'kubelet.podworker.DesiredPod.v1',
        pod: aPod({ metadata: { name: 'pod-p', namespace: 'default', uid: 'p' }, ...podOverrides }),
        updateType: 'create',
        startTime: new Date(clock.now()).toISOString(),
        creationTrace: creation.carrier,
        trace: creation.carrier,
        ...extra,
      });
    };
    return { clock, lister, sink, cache, desired, pleg, creation, want };
  }

  it('the death is a root ContainerDied span linked to the creation trace and to the relist that saw it; later entries carry the episode', async () => {
    const s = setup();
    s.want();
    const start = remote('StartContainer (creation trace)');
    s.lister.pods = [pod('p', [container('c0', 'CONTAINER_RUNNING', 'app')])];
    await s.pleg.relist([start.ctx]);
    assert.equal(t.spansNamed('ContainerDied').length, 0);
    assert.equal(s.cache.entries.get('p')?.episode, undefined);

    // The relist that serves the creation's poke finds the container exited.
    t.reset();
    s.sink.activeAtPublish.length = 0;
    s.clock.advance(300);
    s.lister.pods = [pod('p', [{ ...container('c0', 'CONTAINER_EXITED', 'app'), exitCode: 1, reason: 'Error', restartCount: 0 }])];
    await s.pleg.relist([start.ctx]);
    const [died, ...more] = t.spansNamed('ContainerDied');
    const [relist] = t.spansNamed('relist');
    assert.ok(died && relist);
    assert.equal(more.length, 0);
    assert.equal(died.parentSpanContext, undefined, 'a new trace');
    assert.notEqual(died.spanContext().traceId, s.creation.sc.traceId);
    assert.equal(relist.spanContext().traceId, start.sc.traceId, 'the relist stays in the creation trace');
    assert.deepEqual(
      died.links.map((l) => [l.context.spanId, l.attributes?.['splitlet.link']]),
      [
        [s.creation.sc.spanId, 'creation'],
        [relist.spanContext().spanId, 'observed by'],
      ],
    );
    assert.equal(died.attributes['k8s.pod.uid'], 'p');
    assert.equal(died.attributes['k8s.container.name'], 'app');
    assert.equal(died.attributes['splitlet.container.exit_code'], 1);
    assert.deepEqual(s.sink.activeAtPublish, [died.spanContext().spanId], 'ContainerDied is published in the new trace');
    const entry = s.cache.entries.get('p');
    assert.equal(trace.getSpanContext(extractContext(entry?.episode?.trace))?.spanId, died.spanContext().spanId);
    assert.equal(entry?.episode?.at, s.clock.now());

    // The restarted container: a later entry keeps the episode; no new one begins.
    const at = entry?.episode?.at;
    t.reset();
    s.clock.advance(1000);
    s.lister.pods = [pod('p', [container('c0', 'CONTAINER_EXITED', 'app'), { ...container('c1', 'CONTAINER_RUNNING', 'app'), restartCount: 1 }])];
    await s.pleg.relist();
    assert.equal(t.spansNamed('ContainerDied').length, 0);
    assert.equal(s.cache.entries.get('p')?.episode?.at, at);
    assert.equal(s.cache.entries.get('p')?.timestamp, s.clock.now());
  });

  it("no new trace for an init container, a pod not desired, being deleted or rejected, a death the pod's update caused, or an unreadable desired pod", async () => {
    const cases: Array<[string, (s: ReturnType<typeof setup>) => Context[]]> = [
      [
        'init container',
        (s) => {
          s.want();
          s.lister.pods = [pod('p', [{ ...container('i0', 'CONTAINER_RUNNING', 'init'), init: true }])];
          return [];
        },
      ],
      ['not desired', () => []],
      [
        'deleting',
        (s) => {
          s.want({}, { metadata: { name: 'pod-p', namespace: 'default', uid: 'p', deletionTimestamp: '2025-01-01T00:00:00Z' } });
          return [];
        },
      ],
      [
        'rejected',
        (s) => {
          s.want({ rejected: { reason: 'OutOfcpu', message: 'no' } });
          return [];
        },
      ],
      [
        'caused by the update',
        (s) => {
          const update = remote('config.update');
          s.want({ updateType: 'update', trace: update.carrier });
          return [update.ctx];
        },
      ],
      [
        'desired pod unreadable',
        (s) => {
          s.want();
          s.desired.fail = true;
          return [];
        },
      ],
    ];
    for (const [what, arrange] of cases) {
      const s = setup();
      s.lister.pods = [pod('p', [container('c0', 'CONTAINER_RUNNING', 'app')])];
      const triggers = arrange(s);
      await s.pleg.relist(triggers);
      const running = s.lister.pods[0]!.containers[0]!;
      s.lister.pods = [pod('p', [{ ...running, state: 'CONTAINER_EXITED' }])];
      await s.pleg.relist(triggers);
      assert.equal(t.spansNamed('ContainerDied').length, 0, what);
      assert.equal(s.sink.events.filter((e) => e.event === 'ContainerDied').length, 1, `${what}: the event is published all the same`);
      assert.equal(s.cache.entries.get('p')?.episode, undefined, what);
    }
    // The update's trace is the creation's (no update since): a death is a new episode.
    const s = setup();
    s.want();
    s.lister.pods = [pod('p', [container('c0', 'CONTAINER_RUNNING', 'app')])];
    await s.pleg.relist([]);
    s.lister.pods = [pod('p', [container('c0', 'CONTAINER_EXITED', 'app')])];
    await s.pleg.relist([trace.setSpanContext(ROOT_CONTEXT, { ...s.creation.sc, isRemote: true })]);
    assert.equal(t.spansNamed('ContainerDied').length, 1);
  });
});
