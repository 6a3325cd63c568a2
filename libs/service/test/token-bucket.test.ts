import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBucket } from '../src/token-bucket.js';
import { FakeClock } from '../src/testing/index.js';

describe('TokenBucket (client-go token bucket)', () => {
  it('hands out the burst at once, then one token every 1/qps, in the order asked', () => {
    const clock = new FakeClock(1000);
    const bucket = new TokenBucket(10, 2, clock);
    assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 100, 200]);
    clock.advance(150);
    // Two tokens were borrowed; 1.5 came back: the next one is 150 ms away.
    assert.equal(bucket.reserve(), 150);
  });

  it('refills to the burst and no further while idle', () => {
    const clock = new FakeClock(0);
    const bucket = new TokenBucket(50, 3, clock);
    for (let i = 0; i < 3; i++) assert.equal(bucket.reserve(), 0);
    assert.equal(bucket.reserve(), 20);
    clock.advance(60_000);
    assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0, 20]);
  });

  it('tryAccept takes a token only when one is there, and never waits', () => {
    const clock = new FakeClock(0);
    const bucket = new TokenBucket(2, 2, clock);
    assert.deepEqual([bucket.tryAccept(), bucket.tryAccept(), bucket.tryAccept()], [true, true, false]);
    clock.advance(499);
    assert.equal(bucket.tryAccept(), false);
    clock.advance(1);
    assert.equal(bucket.tryAccept(), true);
    // A reservation borrows: the refill pays it back before tryAccept finds a token again.
    assert.equal(bucket.reserve(), 500);
    clock.advance(500);
    assert.equal(bucket.tryAccept(), false);
    clock.advance(500);
    assert.equal(bucket.tryAccept(), true);
  });

  it('refuses a qps or burst that is not positive, naming it', () => {
    const clock = new FakeClock(0);
    assert.throws(() => new TokenBucket(0, 1, clock), /qps must be a positive number, got 0/);
    assert.throws(() => new TokenBucket(5, 0, clock), /burst must be a positive integer, got 0/);
  });
});
