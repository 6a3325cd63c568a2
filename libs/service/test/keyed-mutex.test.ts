import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedMutex } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

describe('KeyedMutex', () => {
  it('serializes per key in arrival order and runs different keys concurrently', async () => {
    const m = new KeyedMutex();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const a1 = m.run('a', async () => {
      log.push('a1 start');
      await gate;
      log.push('a1 end');
    });
    const a2 = m.run('a', async () => {
      log.push('a2');
    });
    const b1 = m.run('b', async () => {
      log.push('b1');
    });
    await b1;
    assert.deepEqual(log, ['a1 start', 'b1']);
    assert.equal(m.activeKeys, 1);
    release();
    await Promise.all([a1, a2]);
    assert.deepEqual(log, ['a1 start', 'b1', 'a1 end', 'a2']);
    assert.equal(m.activeKeys, 0);
  });

  it('a failure does not block the next operation', async () => {
    const m = new KeyedMutex();
    await assert.rejects(
      m.run('k', async () => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.equal(await m.run('k', async () => 42), 42);
    assert.equal(m.activeKeys, 0);
  });

  it('reports how long the oldest running operation has run, not the queued ones', async () => {
    const clock = new FakeClock(1000);
    const m = new KeyedMutex(clock);
    assert.equal(m.oldestRunningMs(), 0);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running!: () => void;
    const started = new Promise<void>((r) => (running = r));
    const first = m.run('a', () => {
      running();
      return gate;
    });
    await started;
    clock.advance(300);
    const queued = m.run('a', async () => clock.now());
    clock.advance(200);
    assert.equal(m.oldestRunningMs(), 500, 'the running operation, started 500 ms ago');
    release();
    await first;
    assert.equal(await queued, 1500);
    assert.equal(m.oldestRunningMs(), 0);
  });
});
