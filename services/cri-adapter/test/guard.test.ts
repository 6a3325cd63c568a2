import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasErrorCode } from '@splitlet/api';
import { FenceKeeper } from '../src/guard/fence-keeper.js';
import { KeyedMutex } from '../src/guard/keyed-mutex.js';

describe('FenceKeeper', () => {
  it('accepts equal and newer epochs, refuses older ones per partition', () => {
    const f = new FenceKeeper();
    f.check({ partition: 1, epoch: 5 });
    f.check({ partition: 1, epoch: 5 });
    f.check({ partition: 1, epoch: 9 });
    f.check({ partition: 2, epoch: 1 });
    assert.throws(
      () => f.check({ partition: 1, epoch: 8 }),
      (e: unknown) => hasErrorCode(e, 'FencedOff') && (e as { retryable: boolean }).retryable === false && /epoch 8 is older than epoch 9/.test((e as Error).message),
    );
    assert.equal(f.newest(1), 9);
  });
});

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
    release();
    await Promise.all([a1, a2]);
    assert.deepEqual(log, ['a1 start', 'b1', 'a1 end', 'a2']);
    assert.equal(m.activeKeys, 0);
  });
  it('a failure does not block the next operation', async () => {
    const m = new KeyedMutex();
    await assert.rejects(m.run('k', async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await m.run('k', async () => 42), 42);
  });
});
