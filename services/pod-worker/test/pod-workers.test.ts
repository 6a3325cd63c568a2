import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { FakeClock } from '@splitlet/service/testing';
import { PodWorkers, isSyncAborted } from '../src/pod-workers/pod-workers.js';
import type { SyncFunction } from '../src/pod-workers/pod-workers.js';
import { createSyncLimiter } from '../src/pod-workers/sync-limiter.js';
import { FakeDelivery, controllableSync, recordingLog, settle, silentLog } from './fakes.js';

function workers(sync: SyncFunction, opts: { max?: number; clock?: FakeClock; onSyncEvent?: (uid: string, e: 'start' | 'end', i: string) => void } = {}) {
  const clock = opts.clock ?? new FakeClock(1_000_000);
  const w = new PodWorkers({
    partition: 3,
    instance: 'i1',
    sync,
    limiter: createSyncLimiter(opts.max ?? 64),
    clock,
    logger: silentLog,
    random: () => 0,
    ...(opts.onSyncEvent ? { onSyncEvent: opts.onSyncEvent } : {}),
  });
  return { w, clock };
}

describe('PodWorkers', () => {
  it('coalesces pokes during a sync into exactly one more sync, and acks each delivery after the sync that covered it', async () => {
    const s = controllableSync();
    const { w } = workers(s.sync);
    const d1 = new FakeDelivery('d1');
    w.poke('a', 'create', d1);
    await settle();
    assert.equal(s.calls.length, 1);
    const d2 = new FakeDelivery('d2');
    const d3 = new FakeDelivery('d3');
    const d4 = new FakeDelivery('d4');
    w.poke('a', 'update', d2);
    w.poke('a', 'sync', d3);
    w.poke('a', 'update', d4);
    await settle();
    assert.equal(s.calls.length, 1, 'no second sync while the first runs');
    s.calls[0]!.resolve();
    await settle();
    assert.equal(d1.acked, 1, 'd1 acked after the sync that started after it');
    assert.equal(d2.acked + d3.acked + d4.acked, 0, 'pokes received during sync 1 wait for sync 2');
    assert.equal(s.calls.length, 2, 'exactly one more sync');
    s.calls[1]!.resolve();
    await settle();
    assert.deepEqual([d2.acked, d3.acked, d4.acked], [1, 1, 1]);
    assert.equal(s.calls.length, 2, 'and no third');
    assert.deepEqual(s.overlaps, []);
    assert.equal(w.busy, 0);
  });

  it("a sync's trigger is the newest sampled poke it covers (an unsampled resync poke does not hide it), else the newest", async () => {
    const s = controllableSync();
    const { w } = workers(s.sync);
    const ctx = (id: string, flags: number) => trace.setSpanContext(ROOT_CONTEXT, { traceId: id.repeat(32), spanId: id.repeat(16), traceFlags: flags });
    const block = new FakeDelivery('block');
    w.poke('a', 'sync', block);
    await settle();
    w.poke('a', 'sync', new FakeDelivery('traced', ctx('1', TraceFlags.SAMPLED)));
    w.poke('a', 'sync', new FakeDelivery('resync', ctx('2', TraceFlags.NONE)));
    s.calls[0]!.resolve();
    await settle();
    assert.equal(trace.getSpanContext(s.calls[1]!.ctl.trigger!)?.spanId, '1'.repeat(16));
    w.poke('a', 'sync', new FakeDelivery('resync', ctx('3', TraceFlags.NONE)));
    w.poke('a', 'sync', new FakeDelivery('resync', ctx('4', TraceFlags.NONE)));
    s.calls[1]!.resolve();
    await settle();
    assert.equal(trace.getSpanContext(s.calls[2]!.ctl.trigger!)?.spanId, '4'.repeat(16), 'none sampled: the newest');
    s.calls[2]!.resolve();
    await settle();
  });

  it('a kill poke aborts a running non-kill sync; the kill sync runs next and acks what the aborted one covered', async () => {
    const s = controllableSync();
    const { w } = workers(s.sync);
    const d1 = new FakeDelivery();
    w.poke('a', 'create', d1);
    await settle();
    const first = s.calls[0]!;
    const k = new FakeDelivery('kill');
    w.poke('a', 'kill', k);
    await settle();
    assert.ok(first.ctl.signal.aborted, 'running sync aborted');
    assert.ok(isSyncAborted(first.ctl.signal.reason, 'kill'));
    assert.equal(d1.settled, false, 'an aborted sync acks nothing');
    assert.equal(s.calls.length, 2, 'the kill sync starts at once');
    const killSync = s.calls[1]!;
    killSync.ctl.markTerminating();
    // Sticky: later pokes (another kill, an update) do not abort a termination in progress.
    w.poke('a', 'kill', new FakeDelivery());
    w.poke('a', 'update', new FakeDelivery());
    await settle();
    assert.equal(killSync.ctl.signal.aborted, false);
    killSync.resolve();
    await settle();
    assert.equal(d1.acked, 1);
    assert.equal(k.acked, 1);
    assert.equal(s.calls.length, 3, 'one coalesced sync for the pokes during the kill sync');
    s.calls[2]!.resolve();
    await settle();
    assert.deepEqual(s.overlaps, []);
  });

  it('does not block other pods behind a slow sync (no head-of-line blocking)', async () => {
    const s = controllableSync();
    const { w } = workers(s.sync);
    w.poke('slow', 'create');
    await settle();
    for (let i = 0; i < 20; i++) w.poke(`p${i}`, 'create', new FakeDelivery());
    await settle();
    assert.equal(s.running().length, 21, 'every pod syncs concurrently');
    for (const c of s.running().filter((c) => c.uid !== 'slow')) c.resolve();
    await settle();
    assert.equal(s.running().length, 1);
    assert.equal(s.running()[0]!.uid, 'slow');
  });

  it('bounds concurrency with a FIFO queue: a pod poked during its sync goes to the back', async () => {
    const s = controllableSync();
    const { w } = workers(s.sync, { max: 1 });
    w.poke('a', 'create');
    w.poke('b', 'create');
    w.poke('c', 'create');
    await settle();
    assert.deepEqual(
      s.running().map((c) => c.uid),
      ['a'],
    );
    w.poke('a', 'update');
    s.calls[0]!.resolve();
    await settle();
    assert.deepEqual(
      s.running().map((c) => c.uid),
      ['b'],
    );
    s.running()[0]!.resolve();
    await settle();
    assert.deepEqual(
      s.running().map((c) => c.uid),
      ['c'],
    );
    s.running()[0]!.resolve();
    await settle();
    assert.deepEqual(
      s.running().map((c) => c.uid),
      ['a'],
      'a again, after b and c',
    );
    s.running()[0]!.resolve();
    await settle();
    assert.equal(s.calls.length, 4);
  });

  it("a worker state transition (again) runs the next state's sync in the same slot, before the queued pods", async () => {
    const s = controllableSync();
    const { w } = workers(s.sync, { max: 1 });
    const held = new FakeDelivery();
    w.poke('a', 'kill', held);
    w.poke('b', 'create');
    await settle();
    s.calls[0]!.resolve({ again: true });
    await settle();
    assert.deepEqual(
      s.running().map((c) => c.uid),
      ['a'],
      'terminating → terminated at once',
    );
    assert.equal(held.acked, 1, 'the kill poke was covered by the first sync');
    s.running()[0]!.resolve({ again: true });
    await settle();
    assert.deepEqual(
      s.running().map((c) => c.uid),
      ['a'],
    );
    s.running()[0]!.resolve();
    await settle();
    assert.deepEqual(
      s.running().map((c) => c.uid),
      ['b'],
      'then the next pod',
    );
    s.running()[0]!.resolve();
    await settle();
    assert.equal(s.calls.length, 4);
  });

  it('partition loss aborts every in-flight sync at once, naks held deliveries and starts nothing more', async () => {
    const s = controllableSync();
    const { w } = workers(s.sync);
    const held = [new FakeDelivery(), new FakeDelivery(), new FakeDelivery()];
    w.poke('a', 'create', held[0]);
    w.poke('b', 'create', held[1]);
    await settle();
    w.poke('a', 'update', held[2]);
    const stopped = w.stop({ drain: false, timeoutMs: 1000 });
    await settle();
    for (const c of s.calls) {
      assert.ok(c.ctl.stopSignal.aborted);
      assert.ok(isSyncAborted(c.ctl.signal.reason, 'stop'));
    }
    await stopped;
    assert.deepEqual(
      held.map((d) => [d.acked, d.naked]),
      [
        [0, 1],
        [0, 1],
        [0, 1],
      ],
    );
    assert.equal(s.calls.length, 2, 'the pending update was not synced');
    const late = new FakeDelivery();
    w.poke('c', 'create', late);
    assert.equal(late.naked, 1, 'pokes after stop go back to the stream');
  });

  it('a draining stop lets running syncs finish and acks them', async () => {
    const s = controllableSync();
    const clock = new FakeClock(0);
    const { w } = workers(s.sync, { clock });
    const d = new FakeDelivery();
    w.poke('a', 'create', d);
    await settle();
    const stopped = w.stop({ drain: true, timeoutMs: 5000 });
    await settle();
    assert.equal(s.calls[0]!.ctl.signal.aborted, false);
    s.calls[0]!.resolve();
    await stopped;
    assert.equal(d.acked, 1);
  });

  it('a draining stop aborts syncs still running at the deadline', async () => {
    const s = controllableSync();
    const clock = new FakeClock(0);
    const { w } = workers(s.sync, { clock });
    w.poke('a', 'create', new FakeDelivery());
    await settle();
    const stopped = w.stop({ drain: true, timeoutMs: 5000 });
    await settle();
    clock.advance(5000);
    await stopped;
    assert.ok(s.calls[0]!.ctl.signal.aborted);
  });

  it('extends only the deliveries held at least half the working interval, each at most 1.5 intervals apart', async () => {
    const s = controllableSync();
    const clock = new FakeClock(0);
    const { w } = workers(s.sync, { clock });
    const old = new FakeDelivery();
    w.poke('a', 'create', old);
    await settle();
    clock.advance(6_000);
    const young = new FakeDelivery();
    const pending = new FakeDelivery();
    w.poke('b', 'create', young);
    w.poke('a', 'update', pending);
    await settle();
    clock.advance(4_000); // the pass at 10 s: `old` is 10 s old, `young` and `pending` 4 s
    assert.deepEqual([old.workingCalls, young.workingCalls, pending.workingCalls], [1, 0, 0], 'a delivery 4 s old is not extended');
    clock.advance(10_000); // 20 s: each is at least 5 s past its receipt or its last extension
    assert.deepEqual([old.workingCalls, young.workingCalls, pending.workingCalls], [2, 1, 1]);
    s.calls.find((c) => c.uid === 'b')!.resolve({});
    await settle();
    assert.equal(young.acked, 1);
    clock.advance(10_000);
    assert.equal(young.workingCalls, 1, 'an acked delivery is not extended');
    assert.equal(old.workingCalls, 3);
  });

  it('runs no timer while no delivery is held: the working pass is armed by a held delivery and stops once none is', async () => {
    const s = controllableSync();
    const clock = new FakeClock(0);
    const { w } = workers(s.sync, { clock });
    assert.equal(clock.pendingTimers, 0, 'an idle partition has no timer');
    // The first delivery arms the pass; once it is acked, the next one arms it again.
    for (const [i, kind] of (['create', 'update'] as const).entries()) {
      const d = new FakeDelivery();
      w.poke('a', kind, d);
      await settle();
      assert.equal(clock.pendingTimers, 1, `the working pass, armed by held delivery ${i + 1}`);
      clock.advance(10_000);
      assert.equal(d.workingCalls, 1);
      s.calls[i]!.resolve({});
      await settle();
      assert.equal(d.acked, 1);
      clock.advance(10_000); // the pass finds nothing held and is not armed again
      assert.equal(d.workingCalls, 1);
      assert.equal(clock.pendingTimers, 0, 'no timer once nothing is held');
    }
    await w.stop({ drain: true, timeoutMs: 1 });
    assert.equal(clock.pendingTimers, 0);
  });

  it('retries after an unexpected sync failure, and keeps extending ack deadlines during a long sync', async () => {
    const s = controllableSync();
    const clock = new FakeClock(0);
    const { w } = workers(s.sync, { clock });
    const d = new FakeDelivery();
    w.poke('a', 'create', d);
    await settle();
    clock.advance(10_000);
    clock.advance(10_000);
    assert.equal(d.workingCalls, 2, 'working() every 10 s while held');
    s.calls[0]!.reject(new Error('KV unavailable'));
    await settle();
    assert.equal(d.acked, 1, 'the poke is consumed; the retry is local');
    assert.equal(s.calls.length, 1);
    clock.advance(9_999);
    await settle();
    assert.equal(s.calls.length, 1);
    clock.advance(1);
    await settle();
    assert.equal(s.calls.length, 2, 'retried after jitter(10 s)');
    assert.equal(s.calls[1]!.ctl.trigger, undefined, 'an untraced failed sync: an untraced retry');
    s.calls[1]!.resolve();
    await settle();
    await w.stop({ drain: true, timeoutMs: 1 });
    assert.equal(clock.pendingTimers, 0, 'no leaked timers');
  });

  it("syncs again after the resyncAfterMs a sync returned, unless a poke comes first (a settled pod's periodic resync)", async () => {
    const s = controllableSync();
    const clock = new FakeClock(0);
    const { w } = workers(s.sync, { clock });
    w.poke('a', 'sync', new FakeDelivery());
    await settle();
    s.calls[0]!.resolve({ resyncAfterMs: 60_000 });
    await settle();
    clock.advance(59_999);
    await settle();
    assert.equal(s.calls.length, 1);
    clock.advance(1);
    await settle();
    assert.equal(s.calls.length, 2, 'synced again at the resync, with no poke');
    assert.equal(s.calls[1]!.ctl.trigger, undefined, 'a periodic resync starts no trace');
    s.calls[1]!.resolve({ resyncAfterMs: 60_000 });
    await settle();
    clock.advance(30_000);
    w.poke('a', 'sync', new FakeDelivery()); // e.g. a PLEG event: the pending resync is dropped
    await settle();
    assert.equal(s.calls.length, 3);
    s.calls[2]!.resolve({});
    await settle();
    clock.advance(120_000);
    await settle();
    assert.equal(s.calls.length, 3, 'a sync that returned no resync leaves the pod to sync-loop');
    await w.stop({ drain: true, timeoutMs: 1 });
    assert.equal(clock.pendingTimers, 0, 'no leaked timers');
  });

  it("a retry after a failure continues the failed sync's trace (the same episode)", async () => {
    const s = controllableSync();
    const clock = new FakeClock(0);
    const { w } = workers(s.sync, { clock });
    const ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: TraceFlags.SAMPLED });
    w.poke('a', 'sync', new FakeDelivery('died', ctx));
    await settle();
    s.calls[0]!.reject(new Error('request timed out'));
    await settle();
    clock.advance(10_000);
    await settle();
    assert.equal(s.calls.length, 2);
    assert.equal(s.calls[1]!.ctl.trigger, ctx);
    s.calls[1]!.resolve();
    await settle();
    await w.stop({ drain: true, timeoutMs: 1 });
  });

  it('reports every sync start and end (the cross-process overlap test hook) and logs them at debug', async () => {
    const s = controllableSync();
    const events: string[] = [];
    const log = recordingLog();
    const w = new PodWorkers({
      partition: 1,
      instance: 'inst-7',
      sync: s.sync,
      limiter: createSyncLimiter(4),
      clock: new FakeClock(0),
      logger: log,
      onSyncEvent: (uid, e, i) => events.push(`${uid}:${e}:${i}`),
    });
    w.poke('u1', 'create');
    await settle();
    s.calls[0]!.resolve();
    await settle();
    assert.deepEqual(events, ['u1:start:inst-7', 'u1:end:inst-7']);
    const lines = log.lines.filter((l) => l.msg === 'sync start' || l.msg === 'sync end');
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg, l.fields?.['uid'], l.fields?.['instance']]),
      [
        ['debug', 'sync start', 'u1', 'inst-7'],
        ['debug', 'sync end', 'u1', 'inst-7'],
      ],
    );
    await w.stop({ drain: false, timeoutMs: 0 });
  });
});
