import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PerKeyChain } from '../src/api/event-poster.js';

/** A task that records its start and end, and finishes when `release` is called. */
function gate(log: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return {
    release: () => release(),
    task: async (): Promise<string> => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
      return name;
    },
  };
}

describe('PerKeyChain (events of one object in order, of different objects at once)', () => {
  it('runs the tasks of one key one after the other, in order, and other keys meanwhile', async () => {
    const log: string[] = [];
    const chain = new PerKeyChain();
    const a1 = gate(log, 'a1');
    const a2 = gate(log, 'a2');
    const b1 = gate(log, 'b1');
    const runs = [chain.run('a', a1.task), chain.run('a', a2.task), chain.run('b', b1.task)];
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(log, ['start a1', 'start b1'], 'a2 waits for a1; b1 does not');
    a2.release(); // released early: still starts only after a1
    b1.release();
    await runs[2];
    assert.deepEqual(log, ['start a1', 'start b1', 'end b1']);
    a1.release();
    assert.deepEqual(await Promise.all(runs), ['a1', 'a2', 'b1']);
    assert.deepEqual(log, ['start a1', 'start b1', 'end b1', 'end a1', 'start a2', 'end a2']);
    await new Promise((r) => setImmediate(r));
    assert.equal(chain.size, 0, 'nothing kept once the tasks ended');
  });

  it('a failed task fails its caller only; the next task of the key still runs', async () => {
    const chain = new PerKeyChain();
    const failed = chain.run('a', () => Promise.reject(new Error('HTTP 500')));
    const next = chain.run('a', () => Promise.resolve('ok'));
    await assert.rejects(failed, /HTTP 500/);
    assert.equal(await next, 'ok');
  });
});
