import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '@splitlet/service/testing';
import { RelistLoop } from '../src/pleg/relist-loop.js';

function setup() {
  const clock = new FakeClock(0);
  const ac = new AbortController();
  const started: number[] = [];
  const scopes: Array<readonly string[] | undefined> = [];
  let release: (() => void) | undefined;
  let block = false;
  let concurrent = 0;
  let maxConcurrent = 0;
  const loop = new RelistLoop({
    clock,
    signal: ac.signal,
    periodMs: 1000,
    debounceMs: 10,
    onError: (e) => assert.fail(String(e)),
    relist: async (_triggers, uids) => {
      started.push(clock.now());
      scopes.push(uids === undefined ? undefined : [...uids].sort());
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      if (block) await new Promise<void>((r) => (release = r));
      concurrent--;
    },
  });
  return {
    clock,
    ac,
    loop,
    started,
    scopes,
    block: (b: boolean) => (block = b),
    release: () => release?.(),
    maxConcurrent: () => maxConcurrent,
  };
}

describe('RelistLoop', () => {
  it('setPeriod: a longer period postpones the next full relist; a shorter one that is overdue relists at once', async () => {
    const t = setup();
    t.loop.start();
    await t.clock.advanceAsync(0);
    t.loop.setPeriod(300_000);
    assert.equal(t.loop.periodMs, 300_000);
    await t.clock.advanceAsync(200_000);
    assert.deepEqual(t.started, [0]);
    t.loop.setPeriod(1000); // 200 s since the last one ended: due now
    await t.clock.advanceAsync(0);
    assert.deepEqual(t.started, [0, 200_000]);
    await t.clock.advanceAsync(1000);
    assert.deepEqual(t.started, [0, 200_000, 201_000]);
    // During a relist the new period applies from its end.
    t.block(true);
    await t.clock.advanceAsync(1000);
    t.loop.setPeriod(5000);
    t.release();
    t.block(false);
    await t.clock.advanceAsync(4999);
    assert.deepEqual(t.started, [0, 200_000, 201_000, 202_000]);
    await t.clock.advanceAsync(1);
    assert.deepEqual(t.started, [0, 200_000, 201_000, 202_000, 207_000]);
    t.ac.abort();
  });

  it('relists at start and then every period after the previous relist ended', async () => {
    const t = setup();
    t.loop.start();
    await t.clock.advanceAsync(0);
    await t.clock.advanceAsync(3000);
    assert.deepEqual(t.started, [0, 1000, 2000, 3000]);
    t.ac.abort();
    assert.equal(t.clock.pendingTimers, 0);
  });

  it('a poke relists after the debounce, before the period, and pokes collapse', async () => {
    const t = setup();
    t.loop.start();
    await t.clock.advanceAsync(0);
    await t.clock.advanceAsync(200);
    t.loop.poke();
    t.loop.poke();
    await t.clock.advanceAsync(5);
    t.loop.poke();
    await t.clock.advanceAsync(10);
    assert.deepEqual(t.started, [0, 210]);
    // The period restarts from the poked relist.
    await t.clock.advanceAsync(1000);
    assert.deepEqual(t.started, [0, 210, 1210]);
    t.ac.abort();
  });

  it('never runs two relists at once; a poke during a relist schedules exactly one more right after', async () => {
    const t = setup();
    t.block(true);
    t.loop.start();
    await t.clock.advanceAsync(0);
    assert.deepEqual(t.started, [0]);
    t.loop.poke();
    t.loop.poke();
    await t.clock.advanceAsync(2000); // the period timer must not start a second relist
    assert.deepEqual(t.started, [0]);
    t.block(false);
    t.release();
    await t.clock.advanceAsync(0);
    await t.clock.advanceAsync(0);
    assert.deepEqual(t.started, [0, 2000]);
    assert.equal(t.maxConcurrent(), 1);
    t.ac.abort();
  });

  it('pokes naming pods target the relist at them, and never postpone the full periodic relist', async () => {
    const t = setup();
    t.loop.start();
    await t.clock.advanceAsync(0);
    await t.clock.advanceAsync(300);
    t.loop.poke(undefined, 'b');
    t.loop.poke(undefined, 'a');
    t.loop.poke(undefined, 'a');
    await t.clock.advanceAsync(10);
    await t.clock.advanceAsync(290);
    t.loop.poke(undefined, 'c');
    await t.clock.advanceAsync(10);
    // The full relist stays due one period after the first one ended, not after the targeted ones.
    await t.clock.advanceAsync(390);
    assert.deepEqual(t.started, [0, 310, 610, 1000]);
    assert.deepEqual(t.scopes, [undefined, ['a', 'b'], ['c'], undefined]);
    // A poke without a pod, among pods, makes the relist full.
    t.loop.poke(undefined, 'd');
    t.loop.poke();
    await t.clock.advanceAsync(10);
    assert.deepEqual(t.scopes.at(-1), undefined);
    assert.deepEqual(t.started.at(-1), 1010);
    t.ac.abort();
  });

  it('stops on abort: no timers left, pokes ignored', async () => {
    const t = setup();
    t.loop.start();
    await t.clock.advanceAsync(0);
    t.ac.abort();
    t.loop.poke();
    await t.loop.idle();
    assert.equal(t.clock.pendingTimers, 0);
    await t.clock.advanceAsync(5000);
    assert.deepEqual(t.started, [0]);
  });
});
