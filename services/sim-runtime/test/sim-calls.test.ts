/** The simulator's call log: the last MAX_CALLS calls, oldest first, however many were made. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSimRuntime, MAX_CALLS } from '../src/simulator.js';

describe('SimRuntime.calls()', () => {
  it('keeps the last MAX_CALLS calls in order past twice the bound', async () => {
    const sim = createSimRuntime();
    try {
      const total = 2 * MAX_CALLS + 7;
      for (let i = 0; i < total; i++) {
        // Every 1,000th call a Status, so the window's position is visible.
        if (i % 1000 === 0) await sim.Status({});
        else await sim.Version({});
        if (i === MAX_CALLS - 1) assert.equal(sim.calls().length, MAX_CALLS);
      }
      const calls = sim.calls();
      assert.equal(calls.length, MAX_CALLS);
      // The calls kept are total − MAX_CALLS … total − 1: the Status ones are those whose index is a multiple of 1,000.
      const statusAt = calls.flatMap((c, k) => (c.method === 'Status' ? [total - MAX_CALLS + k] : []));
      const expected = Array.from({ length: MAX_CALLS }, (_, k) => total - MAX_CALLS + k).filter((i) => i % 1000 === 0);
      assert.equal(expected.length, 10);
      assert.deepEqual(statusAt, expected);
      assert.equal(calls.at(-1)?.method, 'Version');
    } finally {
      await sim.close();
    }
  });
});
