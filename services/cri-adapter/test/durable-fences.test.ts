import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasErrorCode } from '@splitlet/api';
import { DurableFences, memoryFenceStore } from '../src/guard/durable-fences.js';
import type { FenceStore } from '../src/ports.js';

const fencedOff = (e: unknown): boolean => hasErrorCode(e, 'FencedOff');

describe('DurableFences', () => {
  it('starts from the stored epochs: an older epoch is refused before anything was seen in this process', async () => {
    const store = memoryFenceStore();
    store.epochs.set(2, 9);
    const f = await DurableFences.open(store);
    assert.throws(() => f.check({ partition: 2, epoch: 8 }), fencedOff);
    await assert.rejects(f.admit({ partition: 2, epoch: 8 }), fencedOff);
    await f.admit({ partition: 2, epoch: 9 });
    assert.equal(f.newest(2), 9);
  });

  it('a newer epoch acts only once it is stored; concurrent advances leave the newest stored', async () => {
    const saves: Array<{ partition: number; epoch: number; release: () => void }> = [];
    const epochs = new Map<number, number>();
    const store: FenceStore = {
      load: () => Promise.resolve(new Map()),
      save: (partition, epoch) =>
        new Promise<void>((resolve) =>
          saves.push({
            partition,
            epoch,
            release: () => {
              epochs.set(partition, epoch);
              resolve();
            },
          }),
        ),
    };
    const f = await DurableFences.open(store);
    let fiveActed = false;
    const five = f.admit({ partition: 1, epoch: 5 }).then(() => (fiveActed = true));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      saves.map((s) => s.epoch),
      [5],
    );
    const six = f.admit({ partition: 1, epoch: 6 });
    await new Promise((r) => setImmediate(r));
    assert.equal(fiveActed, false, 'not before the write');
    assert.deepEqual(
      saves.map((s) => s.epoch),
      [5],
      'writes of one partition go one at a time',
    );
    saves[0]?.release();
    await five;
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      saves.map((s) => s.epoch),
      [5, 6],
    );
    saves[1]?.release();
    await six;
    assert.equal(epochs.get(1), 6);
    await f.admit({ partition: 1, epoch: 6 }); // stored already: no write
    assert.equal(saves.length, 2);
  });

  it('a failed write fails the request, and the next one writes again', async () => {
    let fail = true;
    const inner = memoryFenceStore();
    const store: FenceStore = { load: () => inner.load(), save: (p, e) => (fail ? Promise.reject(new Error('kv down')) : inner.save(p, e)) };
    const f = await DurableFences.open(store);
    await assert.rejects(f.admit({ partition: 4, epoch: 3 }), /kv down/);
    fail = false;
    await f.admit({ partition: 4, epoch: 3 });
    assert.equal(inner.epochs.get(4), 3);
  });
});
