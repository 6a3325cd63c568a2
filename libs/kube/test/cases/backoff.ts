// Ports client-go flowcontrol backoff_test.go (TestSlowBackoff, TestBackoffReset,
// TestBackoffHighWaterMark, TestBackoffGC, TestIsInBackOffSinceUpdate) with the kubelet's crash-loop
// settings, plus the JSON round trip.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff, crashLoopBackOffKey, hashContainer, isKubeError, type BackoffState } from '../../src/index.js';
import { aContainer, aManualClock, aPod } from '../../src/testing/index.js';

const S = 1000;

describe('Backoff', () => {
  it('TestSlowBackoff: doubles to the cap', () => {
    const clock = aManualClock(0);
    const b = new Backoff({ initialMs: 10 * S, maxMs: 50 * S, clock });
    const want = [10, 20, 40, 50, 50];
    for (const w of want) {
      b.next('id', clock.now());
      assert.equal(b.get('id'), w * S);
      clock.advance(S);
    }
    b.reset('id');
    assert.equal(b.get('id'), 0);
  });

  it('crash loop: 10, 20, 40, 80, 160, 300, 300 s', () => {
    const clock = aManualClock(1_000_000);
    const b = Backoff.crashLoop(clock);
    const seen: number[] = [];
    for (let i = 0; i < 7; i++) {
      b.next('c', clock.now());
      seen.push(b.get('c') / S);
      clock.advance(b.get('c'));
    }
    assert.deepEqual(seen, [10, 20, 40, 80, 160, 300, 300]);
  });

  it('TestBackoffReset: an entry idle for longer than the expiry restarts at the initial backoff', () => {
    const clock = aManualClock(0);
    const b = new Backoff({ initialMs: S, maxMs: 5 * S, clock });
    b.next('id', clock.now());
    b.next('id', clock.now());
    assert.equal(b.get('id'), 2 * S);
    clock.advance(10 * S + 1); // > 2 × max
    b.next('id', clock.now());
    assert.equal(b.get('id'), S);
  });

  it('crash-loop expiry is 600 s', () => {
    const clock = aManualClock(0);
    const b = Backoff.crashLoop(clock);
    b.next('c', 0);
    b.next('c', 0);
    clock.set(600 * S);
    b.next('c', 600 * S);
    assert.equal(b.get('c'), 40 * S);
    clock.set(1200 * S + 1);
    b.next('c', 1200 * S + 1);
    assert.equal(b.get('c'), 10 * S);
  });

  it('isInBackOffSince measures from the event time (the container FinishedAt)', () => {
    const clock = aManualClock(100 * S);
    const b = Backoff.crashLoop(clock);
    const finishedAt = 100 * S;
    assert.equal(b.isInBackOffSince('c', finishedAt), false);
    b.next('c', finishedAt);
    clock.advance(9 * S);
    assert.equal(b.isInBackOffSince('c', finishedAt), true);
    clock.advance(1 * S);
    assert.equal(b.isInBackOffSince('c', finishedAt), false);
  });

  it('TestIsInBackOffSinceUpdate', () => {
    const clock = aManualClock(0);
    const b = new Backoff({ initialMs: 10 * S, maxMs: 100 * S, clock });
    b.next('id', 0);
    assert.equal(b.isInBackOffSinceUpdate('id', 5 * S), true);
    assert.equal(b.isInBackOffSinceUpdate('id', 10 * S), false);
    assert.equal(b.isInBackOffSinceUpdate('other', 0), false);
  });

  it('TestBackoffGC', () => {
    const clock = aManualClock(0);
    const b = new Backoff({ initialMs: S, maxMs: 60 * S, clock });
    b.next('a', 0);
    clock.advance(61 * S);
    b.next('b', clock.now());
    clock.advance(60 * S);
    b.gc();
    assert.equal(b.get('a'), 0);
    assert.equal(b.get('b'), S);
    assert.equal(b.size, 1);
  });

  it('jitter adds up to maxJitterFactor × backoff', () => {
    const clock = aManualClock(0);
    const b = new Backoff({ initialMs: 10 * S, maxMs: 300 * S, clock, maxJitterFactor: 0.5, random: () => 1 });
    b.next('x', 0);
    assert.equal(b.get('x'), 15 * S);
    b.next('x', 0);
    assert.equal(b.get('x'), 37.5 * S);
  });

  it('serialises to JSON and resumes', () => {
    const clock = aManualClock(0);
    const b = Backoff.crashLoop(clock);
    b.next('c', 0);
    b.next('c', 0);
    const json = JSON.parse(JSON.stringify(b)) as BackoffState;
    assert.deepEqual(json, { version: 1, initialMs: 10_000, maxMs: 300_000, expiryMs: 600_000, entries: { c: { backoffMs: 20_000, lastUpdate: 0 } } });
    const restored = Backoff.fromJSON(json, clock);
    restored.next('c', 0);
    assert.equal(restored.get('c'), 40_000);
    assert.throws(
      () => Backoff.fromJSON({ version: 2 } as unknown as BackoffState, clock),
      (e: unknown) => isKubeError(e, 'InvalidBackoffState'),
    );
  });

  it('crashLoopBackOffKey = name_namespace_uid_container_hash', () => {
    const c = aContainer();
    assert.equal(crashLoopBackOffKey(aPod(), c), `foo_default_12345678_foo1_${hashContainer(c)}`);
  });
});
