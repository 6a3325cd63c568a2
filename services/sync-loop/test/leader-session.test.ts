import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { drained } from '../src/leader-session.js';

function capture(): { logger: ReturnType<typeof createLogger>; warnings: () => { msg: string; waitingOn?: string[]; ms?: number }[] } {
  const lines: string[] = [];
  const logger = createLogger({ service: 'sync-loop', level: 'debug', stream: { write: (l: string) => void lines.push(l) } });
  return {
    logger,
    warnings: () => lines.map((l) => JSON.parse(l) as { level: string; msg: string; waitingOn?: string[]; ms?: number }).filter((l) => l.level === 'warn'),
  };
}

describe('drained: the end of a leader term', () => {
  it('names the parts an ended term still waits on, every 10 s, and stops once they ended', async () => {
    const clock = new FakeClock(1_000);
    const ac = new AbortController();
    const { logger, warnings } = capture();
    let endConsumer!: () => void;
    const consumer = new Promise<void>((r) => (endConsumer = r));
    const ending = drained({ tick: Promise.resolve(), 'the SL_CONFIG consumer': consumer }, ac.signal, clock, logger);
    await clock.advanceAsync(30_000);
    assert.deepEqual(warnings(), [], 'nothing is logged while the term runs');
    ac.abort();
    await clock.advanceAsync(9_999);
    assert.deepEqual(warnings(), []);
    await clock.advanceAsync(1);
    await clock.advanceAsync(10_000);
    assert.deepEqual(
      warnings().map((w) => [w.msg, w.ms, w.waitingOn]),
      [
        ['the ended leader term is still draining', 10_000, ['the SL_CONFIG consumer']],
        ['the ended leader term is still draining', 20_000, ['the SL_CONFIG consumer']],
      ],
    );
    endConsumer();
    await ending;
    assert.equal(clock.pendingTimers, 0, 'no timer is left behind');
  });

  it('rejects as Promise.all does, and leaves no timer', async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    ac.abort();
    const { logger } = capture();
    await assert.rejects(drained({ a: Promise.resolve(), b: Promise.reject(new Error('boom')) }, ac.signal, clock, logger), /boom/);
    assert.equal(clock.pendingTimers, 0);
  });
});
