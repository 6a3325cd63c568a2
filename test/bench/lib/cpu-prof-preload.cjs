/**
 * `--cpu-prof` for processes whose command line the benchmark does not control (node refuses
 * `--cpu-prof` in NODE_OPTIONS, but allows `--require`): with
 * `NODE_OPTIONS=--require <this file>` and `SPLITLET_BENCH_CPU_PROF_DIR=<dir>`, the process profiles
 * itself from start to exit and writes `<dir>/CPU.bench.0.<pid>.0.0.cpuprofile`, the name
 * `node --cpu-prof` would give it (test/bench/lib/cpu-profiles.ts reads both).
 */
'use strict';
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const dir = process.env.SPLITLET_BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  process.on('exit', () => {
    // The in-thread session answers synchronously, so this runs to completion inside 'exit'.
    session.post('Profiler.stop', (err, res) => {
      if (!err) writeFileSync(join(dir, `CPU.bench.0.${process.pid}.0.0.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}
