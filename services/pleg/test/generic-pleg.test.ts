import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '@splitlet/service/testing';
import type { Registry } from 'prom-client';
import { GenericPleg } from '../src/pleg/generic-pleg.js';
import { FakeLister, MemoryCache, MemorySink, container, pod, sandbox, silentLogger, testMetrics } from './fakes.js';

function setup(start = 1_000_000) {
  const clock = new FakeClock(start);
  const lister = new FakeLister();
  const cache = new MemoryCache();
  const sink = new MemorySink();
  const logger = silentLogger();
  const { metrics, registry } = testMetrics();
  const pleg = new GenericPleg({ lister, cache, events: sink, clock, logger, metrics, relistThresholdMs: 180_000 });
  return { clock, lister, cache, sink, logger, registry, pleg };
}

/** A sample as prom-client's histograms report it (`metricName` names the _bucket/_sum/_count series). */
type Sample = { value: number; metricName?: string };

async function metricValue(registry: Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  const values: readonly Sample[] | undefined = m?.values;
  return values?.reduce((a, v) => (v.metricName === undefined || v.metricName.endsWith('_count') || v.metricName === name ? a + v.value : a), 0) ?? NaN;
}

describe('GenericPleg.relist', () => {
  it('publishes events, writes changed pods with the relist start time, then the mark', async () => {
    const t = setup();
    t.lister.pods = [
      pod('1234', [container('c1', 'CONTAINER_EXITED'), container('c2', 'CONTAINER_RUNNING'), container('c3', 'CONTAINER_UNKNOWN')]),
      pod('4567', [container('c1', 'CONTAINER_EXITED')]),
    ];
    const r = await t.pleg.relist();
    assert.equal(r.ok, true);
    // ContainerChanged (c3, unknown) is filtered out, as generic.go does.
    // Each event names the cache write it came from: one per pod, the same for a pod's events.
    const revisions = new Map(t.sink.events.map((e) => [`${e.uid}/${e.data}`, e.cacheRevision]));
    assert.equal(revisions.get('1234/c1'), revisions.get('1234/c2'));
    assert.notEqual(revisions.get('1234/c1'), revisions.get('4567/c1'));
    assert.deepEqual([...new Set(revisions.values())].sort(), [1, 2]);
    // A write's events go out together: one publish per pod, its events in order.
    assert.deepEqual(t.sink.batches.map((b) => b.map((e) => `${e.uid}/${e.event}/${e.data}`)).sort(), [
      ['1234/ContainerDied/c1', '1234/ContainerStarted/c2'],
      ['4567/ContainerDied/c1'],
    ]);
    assert.deepEqual(t.sink.take(), ['1234/ContainerDied/c1', '1234/ContainerStarted/c2', '4567/ContainerDied/c1'].sort());
    assert.equal(t.cache.entries.get('1234')?.timestamp, 1_000_000);
    assert.equal(t.cache.entries.get('4567')?.status.containers[0]?.id, 'c1');
    assert.deepEqual(t.cache.mark, { type: 'kubelet.pleg.RelistMark.v1', timestamp: 1_000_000 });
    assert.equal(t.pleg.healthy().ok, true);

    // No change: no events, no entry writes, only the mark moves.
    t.clock.advance(1000);
    const writes = t.cache.writes;
    await t.pleg.relist();
    assert.deepEqual(t.sink.take(), []);
    assert.equal(t.cache.writes, writes);
    assert.equal(t.cache.mark?.timestamp, 1_001_000);
    assert.equal(t.cache.entries.get('1234')?.timestamp, 1_000_000);

    // Transitions; a vanished pod's entry is deleted.
    t.clock.advance(1000);
    t.lister.pods = [pod('1234', [container('c2', 'CONTAINER_EXITED'), container('c3', 'CONTAINER_RUNNING')])];
    await t.pleg.relist();
    assert.deepEqual(t.sink.take(), ['1234/ContainerRemoved/c1', '1234/ContainerDied/c2', '1234/ContainerStarted/c3', '4567/ContainerRemoved/c1'].sort());
    assert.equal(t.cache.entries.get('1234')?.timestamp, 1_002_000);
    assert.equal(t.cache.entries.has('4567'), false);
  });

  it('a targeted relist reads and compares only the named pods and writes no mark', async () => {
    const t = setup();
    t.lister.pods = [pod('a', [container('a1', 'CONTAINER_RUNNING')]), pod('b', [container('b1', 'CONTAINER_RUNNING')])];
    await t.pleg.relist();
    t.sink.take();
    t.clock.advance(100);
    // Both changed in the runtime; only a is poked about.
    t.lister.pods = [pod('a', [container('a1', 'CONTAINER_EXITED')]), pod('b', [container('b1', 'CONTAINER_EXITED')])];
    const r = await t.pleg.relist([], ['a']);
    assert.deepEqual(t.lister.scopes.at(-1), ['a']);
    assert.equal(r.changedPods, 1);
    assert.deepEqual(t.sink.take(), ['a/ContainerDied/a1']);
    assert.equal(t.cache.entries.get('a')?.timestamp, 1_000_100);
    assert.equal(t.cache.mark?.timestamp, 1_000_000);
    // A targeted pod the runtime no longer knows is deleted; the full relist then sees b.
    t.clock.advance(100);
    t.lister.pods = [pod('b', [container('b1', 'CONTAINER_EXITED')])];
    await t.pleg.relist([], ['a']);
    assert.equal(t.cache.entries.has('a'), false);
    assert.deepEqual(t.sink.take(), ['a/ContainerRemoved/a1']);
    t.clock.advance(100);
    await t.pleg.relist();
    assert.deepEqual(t.sink.take(), ['b/ContainerDied/b1']);
    assert.equal(t.cache.mark?.timestamp, 1_000_300);
  });

  it('stamps events with the relist time, the container name and the cache write', async () => {
    const t = setup(Date.UTC(2024, 0, 1));
    t.lister.pods = [pod('p', [container('id1', 'CONTAINER_RUNNING', 'web')])];
    await t.pleg.relist();
    assert.deepEqual(t.sink.events[0], {
      type: 'kubelet.pleg.PodLifecycleEvent.v1',
      uid: 'p',
      event: 'ContainerStarted',
      data: 'id1',
      containerName: 'web',
      at: '2024-01-01T00:00:00.000Z',
      cacheRevision: 1,
    });
  });

  it('a failed runtime request logs, counts and leaves the mark and the health time alone', async () => {
    const t = setup();
    t.lister.pods = [pod('p', [container('c', 'CONTAINER_RUNNING')])];
    await t.pleg.relist();
    t.clock.advance(1000);
    t.lister.error = new Error('no responder for sl.n.rpc.runtime.relist');
    const r = await t.pleg.relist();
    assert.equal(r.ok, false);
    assert.equal(t.cache.mark?.timestamp, 1_000_000);
    assert.equal(t.pleg.lastRelistTime, 1_000_000);
    assert.equal(await metricValue(t.registry, 'splitlet_pleg_relist_errors_total'), 1);
    assert.ok(t.logger.lines.some((l) => l.includes('GenericPLEG: Unable to retrieve pods')));
    // It recovers: the next relist works and sees nothing new.
    t.lister.error = undefined;
    assert.equal((await t.pleg.relist()).ok, true);
    assert.deepEqual(t.sink.take(), ['p/ContainerStarted/c']);
  });

  it('before the runtime first answered, failures are the node starting: one info line, errors only after the threshold', async () => {
    const t = setup();
    t.lister.error = new Error('no responder for sl.n.rpc.runtime.relist');
    for (let i = 0; i < 5; i++) {
      assert.equal((await t.pleg.relist()).ok, false);
      t.clock.advance(1000);
    }
    const waiting = t.logger.lines.filter((l) => l.includes('waiting for the runtime to answer its first relist'));
    assert.equal(waiting.length, 1);
    assert.match(waiting[0] ?? '', /"level":"info".*no responder for sl\.n\.rpc\.runtime\.relist/);
    assert.ok(!t.logger.lines.some((l) => l.includes('Unable to retrieve pods')));
    assert.equal(await metricValue(t.registry, 'splitlet_pleg_relist_errors_total'), 5);
    // Still no answer a relist threshold after the first try: an error.
    t.clock.advance(180_000);
    await t.pleg.relist();
    assert.ok(t.logger.lines.some((l) => /"level":"error".*GenericPLEG: Unable to retrieve pods/.test(l)));
  });

  it('once the runtime answered, the next failure is an error at once', async () => {
    const t = setup();
    t.lister.error = new Error('no responder');
    await t.pleg.relist();
    t.lister.error = undefined;
    assert.equal((await t.pleg.relist()).ok, true);
    t.lister.error = new Error('request timed out');
    t.clock.advance(1000);
    await t.pleg.relist();
    assert.ok(t.logger.lines.some((l) => /"level":"error".*Unable to retrieve pods.*request timed out/.test(l)));
  });

  it('starts from the cache: a restart does not replay events', async () => {
    const t = setup();
    t.lister.pods = [pod('p', [container('c', 'CONTAINER_RUNNING')], [sandbox('s', true)])];
    await t.pleg.relist();
    t.sink.take();

    const { metrics } = testMetrics();
    const restarted = new GenericPleg({ lister: t.lister, cache: t.cache, events: t.sink, clock: t.clock, logger: t.logger, metrics, relistThresholdMs: 180_000 });
    await restarted.loadCache();
    await restarted.relist();
    assert.deepEqual(t.sink.take(), []);
    t.lister.pods = [pod('p', [container('c', 'CONTAINER_EXITED')], [sandbox('s', true)])];
    await restarted.relist();
    assert.deepEqual(t.sink.take(), ['p/ContainerDied/c']);
  });

  it("a cache write failure drops the pod's events and retries them on the next relist", async () => {
    const t = setup();
    t.lister.pods = [pod('a', [container('c', 'CONTAINER_RUNNING')]), pod('b', [container('c', 'CONTAINER_RUNNING')])];
    t.cache.failPutFor.add('a');
    await t.pleg.relist();
    assert.deepEqual(t.sink.take(), ['b/ContainerStarted/c']);
    t.cache.failPutFor.clear();
    await t.pleg.relist();
    assert.deepEqual(t.sink.take(), ['a/ContainerStarted/c']);
    assert.ok(t.cache.entries.has('a'));
  });

  it('counts events it could not publish as discarded', async () => {
    const t = setup();
    t.sink.fail = true;
    t.lister.pods = [pod('a', [container('c1', 'CONTAINER_RUNNING'), container('c2', 'CONTAINER_EXITED')])];
    await t.pleg.relist();
    assert.equal(await metricValue(t.registry, 'kubelet_pleg_discard_events'), 2);
  });

  it('counts only the events after those that went out as discarded when a write’s publish fails part way', async () => {
    const t = setup();
    t.sink.fail = true;
    t.sink.failAfter = 1;
    t.lister.pods = [pod('a', [container('c1', 'CONTAINER_RUNNING'), container('c2', 'CONTAINER_RUNNING'), container('c3', 'CONTAINER_EXITED')])];
    await t.pleg.relist();
    assert.equal(t.sink.take().length, 1);
    assert.equal(await metricValue(t.registry, 'kubelet_pleg_discard_events'), 2);
  });

  it('keeps the last pod IPs when the sandbox is gone and the runtime reports none (getPodIPs)', async () => {
    const t = setup();
    t.lister.pods = [pod('p', [container('c', 'CONTAINER_RUNNING')], [sandbox('s', true)], ['10.0.0.5'])];
    await t.pleg.relist();
    t.lister.pods = [pod('p', [container('c', 'CONTAINER_EXITED')], [sandbox('s', false)], [])];
    await t.pleg.relist();
    assert.deepEqual(t.cache.entries.get('p')?.status.ips, ['10.0.0.5']);
  });

  it('writes a pod whose status changed without a container transition (e.g. its IP)', async () => {
    const t = setup();
    t.lister.pods = [pod('p', [], [sandbox('s', true)], [])];
    await t.pleg.relist();
    t.sink.take();
    t.clock.advance(1000);
    t.lister.pods = [pod('p', [], [sandbox('s', true)], ['10.0.0.7'])];
    const r = await t.pleg.relist();
    assert.equal(r.changedPods, 1);
    assert.deepEqual(t.sink.take(), []);
    assert.equal(t.cache.entries.get('p')?.timestamp, 1_001_000);
  });

  it('observes the relist duration and interval', async () => {
    const t = setup();
    await t.pleg.relist();
    t.clock.advance(1000);
    await t.pleg.relist();
    assert.equal(await metricValue(t.registry, 'kubelet_pleg_relist_duration_seconds'), 2);
    assert.equal(await metricValue(t.registry, 'kubelet_pleg_relist_interval_seconds'), 1);
  });
});

describe('GenericPleg.healthy', () => {
  it('is unhealthy before the first successful relist', () => {
    const t = setup();
    assert.deepEqual(t.pleg.healthy(), { ok: false, reason: 'pleg has yet to be successful' });
  });

  it('fails past the relist threshold with the kubelet message', async () => {
    const t = setup();
    await t.pleg.relist();
    t.clock.advance(180_000);
    assert.equal(t.pleg.healthy().ok, true);
    t.clock.advance(1500);
    assert.deepEqual(t.pleg.healthy(), { ok: false, reason: 'pleg was last seen active 3m1.5s ago; threshold is 3m0s' });
  });
});
