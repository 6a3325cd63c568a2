import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startHeapTrimmer, type ExposedGc, type HeapTrim } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

const MiB = 1024 * 1024;

/**
 * A process whose RSS, CPU time and event-loop busy share the test sets; its gc brings the RSS
 * down to `afterGc`, and may cost CPU and loop time (`gcCpuMicros`, `gcLoopShare`).
 */
function fakeProcess(): {
  rss: number;
  cpuMicros: number;
  loopShare: number;
  afterGc: number;
  gcCpuMicros: number;
  gcLoopShare: number;
  gcs: Array<Parameters<ExposedGc>[0]>;
  gc: ExposedGc;
} {
  const p = {
    rss: 100 * MiB,
    cpuMicros: 0,
    loopShare: 0.01,
    afterGc: 80 * MiB,
    gcCpuMicros: 0,
    gcLoopShare: 0,
    gcs: [] as Array<Parameters<ExposedGc>[0]>,
    gc: (o?: Parameters<ExposedGc>[0]) => {
      p.gcs.push(o);
      p.rss = p.afterGc;
      p.cpuMicros += p.gcCpuMicros;
      p.loopShare = Math.max(p.loopShare, p.gcLoopShare);
    },
  };
  return p;
}

function start(clock: FakeClock, p: ReturnType<typeof fakeProcess>, signal: AbortSignal, trims: HeapTrim[] = [], minTrimIntervalMs = 15_000): void {
  startHeapTrimmer({
    gc: p.gc,
    signal,
    clock,
    rss: () => p.rss,
    cpuMicros: () => p.cpuMicros,
    loopBusyShare: () => {
      // The share since the previous call: what the test set, once.
      const share = p.loopShare;
      p.loopShare = 0.01;
      return share;
    },
    intervalMs: 1000,
    quietCpuShare: 0.25,
    quietLoopShare: 0.3,
    quietIntervals: 2,
    minGrowthBytes: 24 * MiB,
    minTrimIntervalMs,
    onTrim: (t) => trims.push(t),
  });
}

/** One second of the process: `cpuShare` of a core and `loopShare` of its loop busy. */
function second(clock: FakeClock, p: ReturnType<typeof fakeProcess>, cpuShare: number, loopShare: number): void {
  p.cpuMicros += cpuShare * 1_000_000;
  p.loopShare = loopShare;
  clock.advance(1000);
}

describe('startHeapTrimmer', () => {
  it('runs one memory-reducing GC once the process was quiet for two intervals, and reports what it gave back', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    const trims: HeapTrim[] = [];
    start(clock, p, new AbortController().signal, trims);
    second(clock, p, 0.01, 0.01);
    assert.equal(p.gcs.length, 0, 'one quiet interval is not enough');
    second(clock, p, 0.01, 0.01);
    assert.deepEqual(p.gcs, [{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);
    assert.equal(trims.length, 1);
    assert.equal(trims[0]!.rssBefore, 100 * MiB);
    assert.equal(trims[0]!.rssAfter, 80 * MiB);
    // Quiet and nothing grew: no second trim, however long it stays so.
    clock.advance(60_000);
    assert.equal(p.gcs.length, 1);
  });

  it('waits while the process is busy, and trims once it is quiet again', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    start(clock, p, new AbortController().signal);
    clock.advance(2000); // the start-up trim: RSS 80 MiB after it
    assert.equal(p.gcs.length, 1);
    // A burst: half a core for 20 s while the RSS grows by 150 MiB.
    for (let s = 0; s < 20; s++) {
      p.rss += 7.5 * MiB;
      second(clock, p, 0.5, 0.6);
    }
    assert.equal(p.gcs.length, 1, 'no trim while busy');
    p.afterGc = 110 * MiB;
    second(clock, p, 0.02, 0.05);
    second(clock, p, 0.02, 0.05);
    assert.equal(p.gcs.length, 2);
    assert.equal(p.rss, 110 * MiB);
  });

  it('a starved process with work waiting is not quiet: little CPU, but its event loop busy', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    p.rss = 300 * MiB;
    start(clock, p, new AbortController().signal);
    for (let s = 0; s < 30; s++) second(clock, p, 0.05, 0.95);
    assert.equal(p.gcs.length, 0);
    // And a loop that is idle while the process burns CPU (e.g. in its worker threads) is not quiet either.
    for (let s = 0; s < 30; s++) second(clock, p, 0.9, 0.05);
    assert.equal(p.gcs.length, 0);
  });

  it('needs the RSS to have grown by minGrowthBytes over what the last trim left', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    start(clock, p, new AbortController().signal);
    clock.advance(2000);
    assert.equal(p.gcs.length, 1);
    p.rss = 80 * MiB + 23 * MiB;
    clock.advance(30_000);
    assert.equal(p.gcs.length, 1, '23 MiB is under the growth worth a trim');
    p.rss = 80 * MiB + 24 * MiB;
    clock.advance(1000);
    assert.equal(p.gcs.length, 2);
  });

  it('trims at most once per minTrimIntervalMs', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    p.afterGc = 200 * MiB; // a trim that gives nothing back
    p.rss = 200 * MiB;
    start(clock, p, new AbortController().signal);
    clock.advance(2000);
    assert.equal(p.gcs.length, 1);
    p.rss = 300 * MiB;
    clock.advance(14_000); // 14 s after the trim
    assert.equal(p.gcs.length, 1);
    clock.advance(1000);
    assert.equal(p.gcs.length, 2);
  });

  it('does not count its own GC as load: the intervals after a trim start at its end', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    p.gcCpuMicros = 900_000; // a long GC, its loop busy all along
    p.gcLoopShare = 1;
    start(clock, p, new AbortController().signal, [], 0);
    clock.advance(2000);
    assert.equal(p.gcs.length, 1);
    p.rss = 200 * MiB;
    clock.advance(2000); // two quiet seconds after the GC
    assert.equal(p.gcs.length, 2);
  });

  it('stops, timer cleared, when its signal aborts', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    const ac = new AbortController();
    start(clock, p, ac.signal);
    assert.equal(clock.pendingTimers, 1);
    ac.abort();
    assert.equal(clock.pendingTimers, 0);
    clock.advance(10_000);
    assert.equal(p.gcs.length, 0);
  });
});
