import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProgressMonitor, HealthRegistry, realClock, sleep, isServiceError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

describe('sleep', () => {
  it('resolves true once the clock passes the deadline', async () => {
    const clock = new FakeClock(1000);
    let done: boolean | undefined;
    const p = sleep(500, undefined, clock).then((v) => (done = v));
    clock.advance(499);
    await Promise.resolve();
    assert.equal(done, undefined);
    clock.advance(1);
    assert.equal(await p, true);
    assert.equal(clock.pendingTimers, 0);
  });

  it('resolves false on abort and clears its timer', async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal, clock);
    assert.equal(clock.pendingTimers, 1);
    ac.abort();
    assert.equal(await p, false);
    assert.equal(clock.pendingTimers, 0);
  });

  it('returns false at once for an aborted signal, without a timer', async () => {
    const clock = new FakeClock();
    assert.equal(await sleep(10, AbortSignal.abort(), clock), false);
    assert.equal(clock.pendingTimers, 0);
  });

  it('works with the real clock and abort (no waiting for the timer)', async () => {
    const ac = new AbortController();
    const p = sleep(3_600_000, ac.signal, realClock);
    ac.abort();
    assert.equal(await p, false); // an uncleared 1 h timer would keep this test process alive
  });
});

describe('FakeClock', () => {
  it('fires timers in due order with now() at their due time, including ones scheduled while advancing', () => {
    const clock = new FakeClock(0);
    const log: string[] = [];
    clock.setTimeout(() => log.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => {
      log.push(`a@${clock.now()}`);
      clock.setTimeout(() => log.push(`c@${clock.now()}`), 5);
    }, 10);
    const cancelled = clock.setTimeout(() => log.push('never'), 15);
    clock.clearTimeout(cancelled);
    assert.equal(clock.nextTimerAt(), 10);
    assert.equal(clock.advance(100), 3);
    assert.deepEqual(log, ['a@10', 'c@15', 'b@20']);
    assert.equal(clock.now(), 100);
  });

  it('advanceAsync lets a sleep loop re-arm within one step', async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    let ticks = 0;
    const loop = (async () => {
      while (await sleep(100, ac.signal, clock)) ticks++;
    })();
    assert.equal(await clock.advanceAsync(350), 3);
    assert.equal(ticks, 3);
    ac.abort();
    await loop;
    assert.equal(clock.pendingTimers, 0);
  });
});

describe('ProgressMonitor', () => {
  it('is healthy while progress is fresh, with a PLEG-style reason once it is stale', () => {
    const clock = new FakeClock(0);
    const m = new ProgressMonitor({ name: 'pleg', thresholdMs: 180_000, clock });
    assert.deepEqual(m.healthy(), { ok: true });
    clock.advance(180_001);
    assert.deepEqual(m.healthy(), {
      ok: false,
      reason: 'pleg has made no progress in the 180001 ms since it started; threshold is 180000 ms',
    });
    m.progress();
    assert.equal(m.lastProgressAt(), 180_001);
    assert.deepEqual(m.healthy(), { ok: true });
    clock.advance(180_000);
    assert.equal(m.healthy().ok, true, 'exactly at the threshold is still healthy');
    clock.advance(5_000);
    assert.deepEqual(m.healthy(), { ok: false, reason: 'pleg was last seen active 185000 ms ago; threshold is 180000 ms' });
  });

  it('rejects a non-positive threshold', () => {
    assert.throws(() => new ProgressMonitor({ name: 'x', thresholdMs: 0 }), RangeError);
  });
});

describe('HealthRegistry', () => {
  it('separates liveness from readiness, reports reasons, and treats a throw as failure', () => {
    const h = new HealthRegistry();
    let natsOk = true;
    h.register('pleg', () => ({ ok: true }));
    h.register('nats', () => (natsOk ? { ok: true } : { ok: false, reason: 'disconnected' }));
    const unregister = h.register('partitions', () => ({ ok: false, reason: 'no partition leases yet' }), { readiness: true });
    h.register(
      'broken',
      () => {
        throw new Error('kaput');
      },
      { readiness: true },
    );
    assert.deepEqual(h.liveness(), { ok: true, failures: [] });
    natsOk = false;
    assert.deepEqual(h.liveness(), { ok: false, failures: [{ name: 'nats', reason: 'disconnected' }] });
    assert.deepEqual(h.readiness().failures, [
      { name: 'nats', reason: 'disconnected' },
      { name: 'partitions', reason: 'no partition leases yet' },
      { name: 'broken', reason: 'check threw: kaput' },
    ]);
    unregister();
    assert.equal(h.readiness().failures.length, 2);
    assert.throws(
      () => h.register('pleg', () => ({ ok: true })),
      (e) => isServiceError(e, 'DuplicateHealthCheck'),
    );
  });
});
