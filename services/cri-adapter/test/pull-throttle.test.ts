import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '@splitlet/service/testing';
import { PullThrottle } from '../src/images/pull-throttle.js';

describe('PullThrottle (registryPullQPS / registryBurst)', () => {
  it('allows a burst, then one pull per 1/qps seconds; a refused pull does not wait', () => {
    const clock = new FakeClock(0);
    const t = new PullThrottle(5, 10, clock);
    for (let i = 0; i < 10; i++) assert.equal(t.tryAccept(), true, `pull ${i} of the burst`);
    assert.equal(t.tryAccept(), false, 'the 11th pull at once: pull QPS exceeded');
    clock.advance(199);
    assert.equal(t.tryAccept(), false, 'not yet a token after 199 ms at 5 qps');
    clock.advance(1);
    assert.equal(t.tryAccept(), true, 'a token every 200 ms');
    assert.equal(t.tryAccept(), false);
    clock.advance(60_000);
    for (let i = 0; i < 10; i++) assert.equal(t.tryAccept(), true, 'refilled to the burst, not beyond');
    assert.equal(t.tryAccept(), false);
  });

  it('qps 0 or burst 0: no limit', () => {
    const clock = new FakeClock(0);
    for (const t of [new PullThrottle(0, 10, clock), new PullThrottle(5, 0, clock)]) for (let i = 0; i < 100; i++) assert.equal(t.tryAccept(), true);
  });
});
