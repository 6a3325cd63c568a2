/**
 * What a process holds, on request, for processes whose command line the benchmark does not
 * control: with `NODE_OPTIONS=--require <this file>` and `SPLITLET_BENCH_MEMORY_DIR=<dir>`, each
 * SIGUSR2 makes the process write `<dir>/mem.<pid>.json`: `process.memoryUsage()` (rss, heapTotal,
 * heapUsed, external, arrayBuffers) and V8's heap spaces, then the same after a full GC (`gc`),
 * the time of the request's answer (`t`), and, when `<dir>/snapshot` exists, a heap snapshot
 * `<dir>/heap.<pid>.<t>.heapsnapshot` taken after that GC. Used by test/bench/memory-probe.ts.
 *
 * `SPLITLET_BENCH_V8_FLAGS` (e.g. `--no-maglev`): V8 flags set before the process's own code loads,
 * for trying flags NODE_OPTIONS refuses (V8 reads most of them when it uses them).
 */
'use strict';
const { writeFileSync, existsSync, renameSync } = require('node:fs');
const { join } = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');

if (process.env.SPLITLET_BENCH_V8_FLAGS) v8.setFlagsFromString(process.env.SPLITLET_BENCH_V8_FLAGS);

const dir = process.env.SPLITLET_BENCH_MEMORY_DIR;
if (dir) {
  // A full GC on demand, without --expose-gc on the command line (the known V8 flag trick).
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const sample = () => ({
    ...process.memoryUsage(),
    spaces: Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }])),
  });
  process.on('SIGUSR2', () => {
    const before = sample();
    gc();
    const after = sample();
    const t = Date.now();
    let snapshot;
    if (existsSync(join(dir, 'snapshot'))) snapshot = v8.writeHeapSnapshot(join(dir, `heap.${process.pid}.${t}.heapsnapshot`));
    const file = join(dir, `mem.${process.pid}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify({ t, pid: process.pid, before, gc: after, ...(snapshot ? { snapshot } : {}) }));
    renameSync(`${file}.tmp`, file);
  });
}
