/**
 * Issue 13's benchmark as a smoke run (`npm run bench -- --quick`), a real node on a real
 * nats-server: it exits 0, reports every row of the table with its measure, value and target, a
 * reference for every row that has one, whether the target was met, and the machine's load before
 * and after; and `npm run bench:report` turns its JSON into the report and its charts, each chart
 * captioned with the machine, the date, the load and the commit. Targets are not asserted: a
 * benchmark is not a test, and this one runs on whatever machine CI has.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnProcess } from '@splitlet/testkit';
import type { BenchResult } from '../bench/lib/result.ts';

const root = resolve(import.meta.dirname, '..', '..');
/** The quick run took 2.6 minutes on a quiet 2-core machine (its cpu row alone waits a minute for the periodic syncs); a loaded one is slower. */
const BENCH_DEADLINE_MS = 30 * 60_000;
const ROWS = ['bound', 'steady', 'burst', 'memory', 'cpu', 'delete', 'scale-out'];
/** The rows measured against a reference in the same run (the bound is itself the burst's reference). */
const WITH_REFERENCE = ['steady', 'burst', 'memory', 'delete', 'scale-out'];

/**
 * Runs `node --import tsx <script> …args` in the repository (testkit's spawnProcess: its lines kept,
 * SIGKILLed if this test process exits first); resolves with its exit code and output. Past
 * `deadlineMs` it is stopped — SIGTERM (the bench then stops its node and exits), SIGKILL a minute
 * later if still there — and the run rejects with its output.
 */
async function run(script: string, args: readonly string[], deadlineMs: number): Promise<{ code: number; out: string }> {
  const p = await spawnProcess({ cmd: process.execPath, args: ['--import', 'tsx', join(root, script), ...args], cwd: root, name: script });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), deadlineMs)));
  const first = await Promise.race([p.exited, late]);
  clearTimeout(timer);
  if (first === 'late') {
    await p.stop('SIGTERM', 60_000);
    throw new Error(`${script} did not finish within ${deadlineMs} ms; its output:\n${p.lines.join('\n')}`);
  }
  return { code: first.exitCode, out: p.lines.join('\n') };
}

describe('npm run bench -- --quick, then npm run bench:report (issue 13)', { timeout: BENCH_DEADLINE_MS + 120_000 }, () => {
  let dir: string;
  let bench: { code: number; out: string };
  let result: BenchResult;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sl-bench-smoke-'));
    bench = await run('test/bench/pipeline.bench.ts', ['--quick', '--out', join(dir, 'bench.json')], BENCH_DEADLINE_MS);
    if (existsSync(join(dir, 'bench.json'))) result = JSON.parse(readFileSync(join(dir, 'bench.json'), 'utf8')) as BenchResult;
  });

  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  test('the bench exits 0 and prints the load average before and after', () => {
    assert.equal(bench.code, 0, bench.out);
    assert.match(bench.out, /load average before [\d.]+ [\d.]+ [\d.]+, after [\d.]+ [\d.]+ [\d.]+/);
  });

  test('its JSON holds every row of the table with its measure, value, target, reference and whether it was met', () => {
    assert.ok(result !== undefined, `no JSON written; the bench's output:\n${bench.out}`);
    assert.equal(result.quick, true);
    assert.deepEqual(
      result.rows.map((r) => r.id),
      ROWS,
    );
    for (const row of result.rows) {
      assert.ok(row.measure.length > 0 && row.value.length > 0 && row.target.length > 0, `row ${row.id}: ${JSON.stringify(row)}`);
      if (WITH_REFERENCE.includes(row.id)) assert.match(row.reference ?? '', /\S/, `row ${row.id} has no reference`);
      if (row.id !== 'bound') assert.equal(typeof row.met, 'boolean', `row ${row.id} does not say whether its target was met`);
    }
    const burst = result.rows.find((r) => r.id === 'burst')!;
    assert.ok((burst.data['podsPerSec'] as number) > 0 && (burst.data['cpuBoundPodsPerSec'] as number) > 0, JSON.stringify(burst.data));
    assert.match(burst.reference!, /bus bound .* ratio [\d.]+ %.*CPU bound .* ratio [\d.]+ %/);
    const scale = result.rows.find((r) => r.id === 'scale-out')!;
    assert.ok((scale.data['ratio2'] as number) > 0 && (scale.data['ratio4'] as number) > 0, JSON.stringify(scale.data));
    assert.equal(result.loadBefore.length, 3);
    assert.equal(result.loadAfter.length, 3);
  });

  test('the report and its three charts are generated from it, each chart saying the machine, the date, the load and the commit', async () => {
    assert.ok(result !== undefined, 'no JSON written');
    const out = join(dir, 'report');
    const report = await run('test/bench/render-report.ts', [join(dir, 'bench.json'), '--out', out], 120_000);
    assert.equal(report.code, 0, report.out);
    const md = readFileSync(join(out, 'benchmarks.md'), 'utf8');
    for (const row of result.rows) assert.ok(md.includes(row.measure), `the report has no row "${row.measure}"`);
    assert.ok(md.includes(`commit ${result.commit}`), 'the report does not name the commit');
    const model = result.machine.model.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); // as the SVG escapes it
    for (const chart of ['latency-vs-rate.svg', 'steady-latency.svg', 'scale-out.svg']) {
      const svg = readFileSync(join(out, 'benchmarks', chart), 'utf8');
      assert.match(svg, /^<svg/);
      for (const part of [model, result.date.slice(0, 10), `load ${result.loadBefore[0]}→${result.loadAfter[0]}`, `commit ${result.commit}`, '--quick']) {
        assert.ok(svg.includes(part), `${chart} does not say "${part}"`);
      }
      assert.ok(md.includes(`benchmarks/${chart}`), `the report does not show ${chart}`);
    }
  });
});
