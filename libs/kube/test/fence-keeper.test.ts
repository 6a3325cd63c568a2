import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasErrorCode } from '@splitlet/api';
import { FENCED_OFF, FenceKeeper } from '../src/index.js';

describe('FenceKeeper', () => {
  it('accepts equal and newer epochs, refuses older ones per partition', () => {
    const f = new FenceKeeper();
    f.check({ partition: 1, epoch: 5 });
    f.check({ partition: 1, epoch: 5 });
    f.check({ partition: 1, epoch: 9 });
    f.check({ partition: 2, epoch: 1 });
    assert.throws(
      () => f.check({ partition: 1, epoch: 8 }),
      (e: unknown) =>
        hasErrorCode(e, FENCED_OFF) &&
        (e as { retryable: boolean }).retryable === false &&
        (e as Error).message === 'fenced off: partition 1 epoch 8 is older than epoch 9 already seen',
    );
    assert.equal(f.newest(1), 9);
    assert.equal(f.newest(2), 1);
    assert.equal(f.newest(3), undefined);
  });

  it('a refused fence does not lower the mark', () => {
    const f = new FenceKeeper();
    f.check({ partition: 0, epoch: 7 });
    assert.throws(() => f.check({ partition: 0, epoch: 3 }));
    assert.equal(f.newest(0), 7);
  });
});
