import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startHeapTrimmer, type ExposedGc, type HeapTrim } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

const MiB = 1024 * 1024;

/** A process whose RSS and CPU the test sets; its gc brings the RSS down to `afterGc`. */
function fakeProcess(): { rss: number; cpuMicros: number; afterGc: number; gcs: Array<Parameters<ExposedGc>[0]>; gc: ExposedGc } {
  const p = {
    rss: 100 * MiB,
    cpuMicros: 0,
    afterGc: 80 * MiB,
    gcs: [] as Array<Parameters<ExposedGc>[0]>,
    gc: (o?: Parameters<ExposedGc>[0]) => {
      p.gcs.push(o);
      p.rss = p.afterGc;
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
    intervalMs: 1000,
    quietCpuShare: 0.2,
    minGrowthBytes: 24 * MiB,
    minTrimIntervalMs,
    onTrim: (t) => trims.push(t),
  });
}

describe('startHeapTrimmer', () => {
  it('runs one memory-reducing GC once the process is quiet, and reports what it gave back', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    const trims: HeapTrim[] = [];
    start(clock, p, new AbortController().signal, trims);
    clock.advance(1000);
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
    clock.advance(1000); // the start-up trim: RSS 80 MiB after it
    assert.equal(p.gcs.length, 1);
    // A burst: half a core for 20 s while the RSS grows by 150 MiB.
    for (let s = 0; s < 20; s++) {
      p.cpuMicros += 500_000;
      p.rss += 7.5 * MiB;
      clock.advance(1000);
    }
    assert.equal(p.gcs.length, 1, 'no trim while busy');
    p.afterGc = 110 * MiB;
    clock.advance(1000); // the first quiet second
    assert.equal(p.gcs.length, 2);
    assert.equal(p.rss, 110 * MiB);
  });

  it('needs the RSS to have grown by minGrowthBytes over what the last trim left', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    start(clock, p, new AbortController().signal);
    clock.advance(1000);
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
    clock.advance(1000);
    assert.equal(p.gcs.length, 1);
    p.rss = 300 * MiB;
    clock.advance(14_000);
    assert.equal(p.gcs.length, 1);
    clock.advance(1000);
    assert.equal(p.gcs.length, 2);
  });

  it('does not count its own GC as load: the interval after a trim starts at its end', () => {
    const clock = new FakeClock(0);
    const p = fakeProcess();
    p.gc = () => {
      p.gcs.push(undefined);
      p.cpuMicros += 900_000; // a long GC
      p.rss = p.afterGc;
    };
    start(clock, p, new AbortController().signal, [], 0);
    clock.advance(1000);
    assert.equal(p.gcs.length, 1);
    p.rss = 200 * MiB;
    clock.advance(1000); // 0.9 s of CPU in the GC, none since: quiet
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
