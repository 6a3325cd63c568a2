/**
 * The evented PLEG: reports from cri-adapter applied as a targeted relist's results are (merged per
 * sandbox, ordered against relists by observation time, entry timestamps never going back), and
 * the mode machine (new stream / gap / down / silence → relist every period; a full relist after
 * it → the long period; the heartbeat moves the global cache time; health by progress).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import type { Registry } from 'prom-client';
import type { RuntimeEventMessage, RuntimePodStatus } from '@splitlet/api';
import { FakeClock } from '@splitlet/service/testing';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import { EventedPleg } from '../src/pleg/evented-pleg.js';
import { GenericPleg, type RuntimeReport } from '../src/pleg/generic-pleg.js';
import { FakeLister, MemoryCache, MemorySink, container, pod, sandbox, silentLogger, testMetrics } from './fakes.js';

/** One sandbox of pod `uid` and its containers, as an event reports them. */
function part(uid: string, sandboxId: string, ready: boolean, containers: Array<[string, RuntimePodStatus['containers'][number]['state']]>, observedAt: number): RuntimeReport {
  const status = pod(
    uid,
    containers.map(([id, state]) => ({ ...container(id, state), sandboxId })),
    [{ ...sandbox(sandboxId, ready), createdAt: Number(sandboxId.replace(/\D/g, '') || '1') }],
  );
  return { kind: 'part', uid, sandboxId, status, observedAt };
}

function setup(start = 1_000_000) {
  const clock = new FakeClock(start);
  const lister = new FakeLister();
  const cache = new MemoryCache();
  const sink = new MemorySink();
  const { metrics, registry } = testMetrics();
  const pleg = new GenericPleg({ lister, cache, events: sink, clock, logger: silentLogger(), metrics, relistThresholdMs: 180_000 });
  return { clock, lister, cache, sink, metrics, registry, pleg };
}

describe('GenericPleg.applyReports', () => {
  it('a new pod from its sandbox part: entry at the event time, events as a relist would publish them', async () => {
    const t = setup();
    const r = await t.pleg.applyReports([part('a', 's1', true, [['c1', 'CONTAINER_RUNNING']], 1_000_050)]);
    assert.deepEqual(r, { events: 2, changedPods: 1, stale: 0, uncertain: [] });
    assert.deepEqual(t.sink.take(), ['a/ContainerStarted/c1', 'a/ContainerStarted/s1']);
    assert.equal(t.cache.entries.get('a')?.timestamp, 1_000_050);
    assert.equal(t.cache.entries.get('a')?.status.containers[0]?.sandboxId, 's1');
  });

  it("a part replaces only its own sandbox and that sandbox's containers; the last one deleted removes the pod", async () => {
    const t = setup();
    // The pod as a relist saw it: an old, stopped sandbox with an exited container, and a new one.
    t.lister.pods = [
      pod(
        'a',
        [
          { ...container('c0', 'CONTAINER_EXITED'), sandboxId: 's1' },
          { ...container('c1', 'CONTAINER_RUNNING'), sandboxId: 's2', createdAt: 2 },
        ],
        [
          { ...sandbox('s2', true), createdAt: 2, ip: '10.0.0.2' },
          { ...sandbox('s1', false), createdAt: 1 },
        ],
        ['10.0.0.2'],
      ),
    ];
    await t.pleg.relist();
    t.sink.take();
    t.clock.advance(100);
    // s2's container died: the event knows only s2.
    await t.pleg.applyReports([
      { ...part('a', 's2', true, [['c1', 'CONTAINER_EXITED']], 1_000_090), status: { ...part('a', 's2', true, [['c1', 'CONTAINER_EXITED']], 0).status, ips: ['10.0.0.2'] } },
    ]);
    const rec = t.pleg.pods.get('a')!;
    assert.deepEqual(
      rec.sandboxes.map((s) => s.id),
      ['s2', 's1'],
    );
    assert.deepEqual(rec.containers.map((c) => `${c.id} ${c.state}`).sort(), ['c0 CONTAINER_EXITED', 'c1 CONTAINER_EXITED']);
    assert.deepEqual(t.sink.take(), ['a/ContainerDied/c1']);
    // Both sandboxes removed: nothing is left of the pod.
    await t.pleg.applyReports([
      { kind: 'part', uid: 'a', sandboxId: 's1', status: pod('a', []), observedAt: 1_000_095 },
      { kind: 'part', uid: 'a', sandboxId: 's2', status: pod('a', []), observedAt: 1_000_096 },
    ]);
    assert.equal(t.cache.entries.has('a'), false);
    // s2 was still ready: it dies as it goes (as generic.go reports a container gone without an exit).
    assert.deepEqual(t.sink.take(), ['a/ContainerDied/s2', 'a/ContainerRemoved/c0', 'a/ContainerRemoved/c1', 'a/ContainerRemoved/s1', 'a/ContainerRemoved/s2'].sort());
  });

  it('never goes back in time: a report older than the relist applied before it is dropped; newer ones apply', async () => {
    const t = setup();
    t.lister.pods = [pod('a', [container('c1', 'CONTAINER_EXITED')], [sandbox('s', true)])];
    await t.pleg.relist(); // t0 = 1_000_000 saw c1 exited
    t.sink.take();
    // An event from before that relist (c1 still running) arrives late: dropped.
    const stale = await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_RUNNING']], 999_990)]);
    assert.equal(stale.stale, 1);
    assert.equal(t.pleg.pods.get('a')?.containers[0]?.state, 'CONTAINER_EXITED');
    // A new container started after it: applied.
    t.clock.advance(50);
    await t.pleg.applyReports([
      part(
        'a',
        's',
        true,
        [
          ['c1', 'CONTAINER_EXITED'],
          ['c2', 'CONTAINER_RUNNING'],
        ],
        1_000_040,
      ),
    ]);
    assert.deepEqual(t.sink.take(), ['a/ContainerStarted/c2']);
    // A relist that started after it sees what is there now.
    t.clock.advance(10);
    t.lister.pods = [pod('a', [container('c1', 'CONTAINER_EXITED')], [sandbox('s', true)])];
    await t.pleg.relist();
    assert.deepEqual(t.sink.take(), ['a/ContainerDied/c2', 'a/ContainerRemoved/c2']);
  });

  it('an operation report gives the entry its later timestamp even when the record did not change; timestamps never go back', async () => {
    const t = setup();
    await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_RUNNING']], 1_000_010)]);
    const status = t.pleg.pods.get('a')!;
    await t.pleg.applyReports([{ kind: 'operation', uid: 'a', status, observedAt: 1_000_005, timestamp: 1_000_031 }]);
    assert.equal(t.cache.entries.get('a')?.timestamp, 1_000_031);
    assert.deepEqual(t.sink.take(), ['a/ContainerStarted/c1', 'a/ContainerStarted/s']);
    // A later event observed before that timestamp still applies; the entry keeps the later time.
    await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_EXITED']], 1_000_020)]);
    assert.equal(t.cache.entries.get('a')?.status.containers[0]?.state, 'CONTAINER_EXITED');
    assert.equal(t.cache.entries.get('a')?.timestamp, 1_000_031);
  });

  it("an operation's read is a relist of its pod: an event older than it, arriving after it (the stream lags), is dropped", async () => {
    const t = setup();
    const running = pod('a', [{ ...container('c1', 'CONTAINER_RUNNING'), sandboxId: 's' }], [sandbox('s', true)]);
    await t.pleg.applyReports([{ kind: 'operation', uid: 'a', status: running, observedAt: 1_000_020, timestamp: 1_000_031 }]);
    t.sink.take();
    const late = await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_CREATED']], 1_000_010)]);
    assert.equal(late.stale, 1);
    assert.equal(t.pleg.pods.get('a')?.containers[0]?.state, 'CONTAINER_RUNNING');
    assert.deepEqual(t.sink.take(), []);
    // A newer one applies.
    await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_EXITED']], 1_000_040)]);
    assert.deepEqual(t.sink.take(), ['a/ContainerDied/c1']);
  });

  it("a report within the clocks' skew of the read before it is not ordered by time: the pod is to be relisted", async () => {
    const t = setup();
    t.lister.pods = [pod('a', [container('c1', 'CONTAINER_RUNNING')], [sandbox('s', true)])];
    await t.pleg.relist(); // t0 = 1_000_000
    const before = await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_EXITED']], 999_996)]);
    assert.deepEqual([before.stale, before.uncertain], [1, ['a']]);
    const after = await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_EXITED']], 1_000_004)]);
    assert.deepEqual([after.stale, after.uncertain, after.changedPods], [0, ['a'], 1]);
    const clear = await t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_EXITED']], 1_000_050)]);
    assert.deepEqual(clear.uncertain, []);
    // Close to the read but saying what the record says: nothing to settle.
    const same = await t.pleg.applyReports([
      { kind: 'operation', uid: 'a', status: t.pleg.pods.get('a')!, observedAt: 1_000_100, timestamp: 1_000_101 },
      part('a', 's', true, [['c1', 'CONTAINER_EXITED']], 1_000_095),
    ]);
    assert.deepEqual(same.uncertain, []);
  });

  it('a relist that started before an applied report leaves that pod alone', async () => {
    const t = setup();
    t.lister.pods = [pod('a', [container('c1', 'CONTAINER_RUNNING')], [sandbox('s', true)])];
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    let reading!: () => void;
    const read = new Promise<void>((r) => (reading = r));
    const inner = t.lister.relist.bind(t.lister);
    t.lister.relist = async (uids) => {
      const out = await inner(uids); // the runtime as of t0: c1 running
      reading();
      await slow; // the reply is slow
      return out;
    };
    const relist = t.pleg.relist();
    await read; // t0 = 1_000_000
    t.clock.advance(20);
    const applied = t.pleg.applyReports([part('a', 's', true, [['c1', 'CONTAINER_EXITED']], 1_000_015)]);
    release();
    await relist;
    await applied;
    // The report ran after the relist (one at a time), and is newer than the relist's start.
    assert.equal(t.pleg.pods.get('a')?.containers[0]?.state, 'CONTAINER_EXITED');
    // The next relist (after it) is applied again.
    t.lister.relist = inner;
    t.lister.pods = [pod('a', [container('c1', 'CONTAINER_EXITED')], [sandbox('s', true)])];
    await t.pleg.relist();
    assert.equal(t.pleg.pods.get('a')?.containers[0]?.state, 'CONTAINER_EXITED');
  });

  it('updateGlobalCache moves the relist mark forward only', async () => {
    const t = setup();
    await t.pleg.updateGlobalCache(1_000_100);
    await t.pleg.updateGlobalCache(1_000_050);
    assert.equal(t.cache.mark?.timestamp, 1_000_100);
    t.clock.advance(200);
    t.lister.pods = [];
    await t.pleg.relist();
    assert.equal(t.cache.mark?.timestamp, 1_000_200);
  });
});

describe('GenericPleg.applyReports tracing', () => {
  let tracing: TestTracing;
  before(() => {
    tracing = createTestTracing({ register: true, serviceName: 'pleg' });
  });
  after(() => tracing.shutdown());

  it("a pod's reports from an operation's trace are applied in a `runtime events` span of that trace; others in one root span", async () => {
    tracing.reset();
    const clock = new FakeClock(1_000_000);
    const pleg = new GenericPleg({
      lister: new FakeLister(),
      cache: new MemoryCache(),
      events: new MemorySink(),
      clock,
      logger: silentLogger(),
      metrics: testMetrics().metrics,
      relistThresholdMs: 1,
      tracer: tracing.tracer,
    });
    const op = tracing.tracer.startSpan('runtime.SyncPod');
    const trigger = trace.setSpan(ROOT_CONTEXT, op);
    await pleg.applyReports([{ ...part('a', 's1', true, [['c1', 'CONTAINER_RUNNING']], 1_000_000), trigger }, part('b', 's2', true, [['c2', 'CONTAINER_RUNNING']], 1_000_000)]);
    op.end();
    const spans = tracing.spansNamed('runtime events');
    assert.equal(spans.length, 2);
    const ofA = spans.find((s) => s.attributes['k8s.pod.uid'] === 'a')!;
    assert.equal(ofA.spanContext().traceId, op.spanContext().traceId);
    assert.equal(ofA.parentSpanContext?.spanId, op.spanContext().spanId);
    assert.equal(ofA.attributes['splitlet.pleg.events'], 2);
    const root = spans.find((s) => s !== ofA)!;
    assert.equal(root.parentSpanContext, undefined);
    assert.equal(root.attributes['splitlet.pleg.trigger'], 'event');
    assert.equal(root.attributes['splitlet.pleg.changed_pods'], 1);
    assert.equal(op.spanContext().traceFlags & TraceFlags.SAMPLED, TraceFlags.SAMPLED);
  });
});

/** The stream's messages, numbered in order. */
function stream(id: string) {
  let seq = 0;
  const base = () => ({ stream: id, seq: ++seq });
  return {
    skip: (n: number) => (seq += n),
    live: (at: number): RuntimeEventMessage => ({ type: 'kubelet.runtime.EventStreamState.v1', ...base(), state: 'live', at }),
    down: (reason: string): RuntimeEventMessage => ({ type: 'kubelet.runtime.EventStreamState.v1', ...base(), state: 'down', at: 0, reason }),
    events: (p: RuntimeReport & { kind: 'part' }): RuntimeEventMessage => ({
      type: 'kubelet.runtime.ContainerEvents.v1',
      ...base(),
      uid: p.uid,
      sandboxId: p.sandboxId,
      status: p.status,
      observedAt: p.observedAt,
      events: [{ containerId: p.sandboxId, event: 'CONTAINER_STARTED_EVENT', at: p.observedAt }],
    }),
  };
}

function eventedSetup() {
  const t = setup();
  const ac = new AbortController();
  const loop = {
    periods: [] as number[],
    pokes: 0,
    podPokes: [] as string[],
    setPeriod: (ms: number) => loop.periods.push(ms),
    poke: (uid?: string) => (uid === undefined ? loop.pokes++ : loop.podPokes.push(uid)),
  };
  const evented = new EventedPleg({
    pleg: t.pleg,
    loop,
    clock: t.clock,
    logger: silentLogger(),
    metrics: t.metrics,
    relistPeriodMs: 1000,
    relistThresholdMs: 180_000,
    eventedRelistPeriodMs: 300_000,
    eventedRelistThresholdMs: 600_000,
    streamTimeoutMs: 10_000,
    signal: ac.signal,
  });
  return { ...t, ac, loop, evented };
}

describe('EventedPleg', () => {
  it('a new stream: relist in full, then the long period; the heartbeat moves the global cache time', async () => {
    const t = eventedSetup();
    const s = stream('s1');
    await t.evented.relist([], undefined); // the first relist, before any stream
    assert.equal(t.evented.mode, 'generic');
    t.clock.advance(100);
    t.evented.receive(s.live(1_000_100));
    assert.equal(t.loop.pokes, 1, 'a full relist is asked for');
    assert.equal(t.evented.mode, 'generic');
    // A heartbeat before that relist is no cache time: events before the stream may be missing.
    await t.evented.idle();
    assert.equal(t.cache.mark?.timestamp, 1_000_000);
    // A targeted relist is not enough; a full one started after the stream is.
    await t.evented.relist([], ['a']);
    assert.equal(t.evented.mode, 'generic');
    await t.evented.relist([], undefined);
    assert.equal(t.evented.mode, 'evented');
    assert.deepEqual(t.loop.periods, [300_000]);
    assert.equal(await metric(t.registry, 'splitlet_pleg_evented'), 1);
    t.clock.advance(1000);
    t.evented.receive(s.events(part('a', 's', true, [['c1', 'CONTAINER_RUNNING']], 1_001_050) as RuntimeReport & { kind: 'part' }));
    t.evented.receive(s.live(1_001_100));
    await t.evented.idle();
    assert.equal(t.pleg.pods.get('a')?.containers[0]?.state, 'CONTAINER_RUNNING');
    assert.equal(t.cache.mark?.timestamp, 1_001_100);
    // A report too close to the pod's last read to be ordered by time: that pod is relisted.
    t.lister.pods = [pod('a', [{ ...container('c1', 'CONTAINER_RUNNING'), sandboxId: 's' }], [sandbox('s', true)])];
    await t.evented.relist([], ['a']);
    t.evented.receive(s.events(part('a', 's', true, [['c1', 'CONTAINER_EXITED']], t.clock.now() - 3) as RuntimeReport & { kind: 'part' }));
    await t.evented.idle();
    assert.deepEqual(t.loop.podPokes, ['a']);
    t.ac.abort();
  });

  it('a gap, a down stream or silence: back to relisting every period at once, and back to events once whole again', async () => {
    const t = eventedSetup();
    const s = stream('s1');
    t.evented.receive(s.live(t.clock.now()));
    await t.evented.relist([], undefined);
    assert.equal(t.evented.mode, 'evented');
    // A lost message.
    s.skip(1);
    t.evented.receive(s.live(t.clock.now()));
    assert.equal(t.evented.mode, 'generic');
    assert.equal(t.loop.pokes, 2);
    assert.deepEqual(t.loop.periods, [300_000, 1000]);
    t.clock.advance(10);
    await t.evented.relist([], undefined);
    assert.equal(t.evented.mode, 'evented');
    // Silence: after the timeout the period is short again; the same stream resuming in order needs no relist.
    await t.clock.advanceAsync(13_000);
    assert.equal(t.evented.mode, 'generic');
    assert.equal(t.loop.pokes, 3);
    t.evented.receive(s.live(t.clock.now()));
    assert.equal(t.evented.mode, 'evented');
    assert.equal(t.loop.pokes, 3);
    // Down (the runtime restarted): relist at once; a new stream must be caught up with before events count.
    t.evented.receive(s.down('the container event stream failed: runtime gone'));
    assert.equal(t.evented.mode, 'generic');
    assert.equal(t.loop.pokes, 4);
    const s2 = stream('s2');
    t.evented.receive(s2.live(t.clock.now()));
    assert.equal(t.evented.mode, 'generic');
    t.clock.advance(5);
    await t.evented.relist([], undefined);
    assert.equal(t.evented.mode, 'evented');
    assert.deepEqual(await metricsByLabel(t.registry, 'splitlet_pleg_event_stream_resyncs_total'), { new_stream: 2, gap: 1, timeout: 1, down: 1 });
    t.ac.abort();
  });

  it('health by progress: a relist or an applied heartbeat within the threshold of the mode', async () => {
    const t = eventedSetup();
    assert.deepEqual(t.evented.healthy(), { ok: false, reason: 'pleg has yet to be successful' });
    const s = stream('s1');
    t.evented.receive(s.live(t.clock.now()));
    await t.evented.relist([], undefined);
    assert.equal(t.evented.mode, 'evented');
    // Events flow (heartbeats applied) and no relist for 5 min: healthy, pleg is seen active.
    for (let i = 0; i < 300; i++) {
      t.clock.advance(1000);
      t.evented.receive(s.live(t.clock.now()));
      await t.evented.idle();
    }
    assert.deepEqual(t.evented.healthy(), { ok: true });
    assert.equal(await metric(t.registry, 'kubelet_pleg_last_seen_seconds'), Math.floor(t.clock.now() / 1000));
    // The stream goes silent (cri-adapter is gone) and the relists fail: generic, so 3 min after the last heartbeat it is unhealthy.
    t.lister.error = new Error('no responder');
    await t.clock.advanceAsync(13_000);
    assert.equal(t.evented.mode, 'generic');
    await t.evented.relist([], undefined);
    t.clock.advance(2 * 60_000);
    assert.equal(t.evented.healthy().ok, true);
    t.clock.advance(60_000);
    assert.deepEqual(t.evented.healthy(), { ok: false, reason: 'pleg was last seen active 3m13s ago; threshold is 3m0s' });
    t.ac.abort();
  });

  it('while evented, the threshold is the evented one (10 min): a stuck cache write shows there, not at 3 min', async () => {
    const t = eventedSetup();
    const s = stream('s1');
    t.evented.receive(s.live(t.clock.now()));
    await t.evented.relist([], undefined);
    assert.equal(t.evented.mode, 'evented');
    // From now on no heartbeat gets applied (the global cache write hangs), while the stream stays live.
    t.cache.putMark = () => new Promise<void>(() => undefined);
    for (let i = 0; i < 9 * 60; i++) {
      t.clock.advance(1000);
      t.evented.receive(s.live(t.clock.now()));
    }
    assert.equal(t.evented.mode, 'evented');
    assert.deepEqual(t.evented.healthy(), { ok: true });
    for (let i = 0; i < 61; i++) {
      t.clock.advance(1000);
      t.evented.receive(s.live(t.clock.now()));
    }
    assert.deepEqual(t.evented.healthy(), { ok: false, reason: 'pleg was last seen active 10m1s ago; threshold is 10m0s' });
    t.ac.abort();
  });
});

async function metric(registry: Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return m?.values[0]?.value ?? NaN;
}

async function metricsByLabel(registry: Registry, name: string): Promise<Record<string, number>> {
  const m = await registry.getSingleMetric(name)?.get();
  return Object.fromEntries((m?.values ?? []).map((v) => [String(v.labels['reason']), v.value]));
}
