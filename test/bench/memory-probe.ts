/**
 * What each process of a node holds, idle and with N pods: starts a fresh node (as the bench's
 * memory row does), samples every splitlet process 3 s after start (idle), then after a burst of N
 * pods once the node has drained and 2 s more (loaded), and prints per process the RSS,
 * heapTotal, heapUsed, external and arrayBuffers (MiB), and heapUsed after a full GC (what the heap
 * really keeps alive), the kernel's split of the RSS (anonymous, file-backed) and its peak. Each
 * process answers through lib/memory-preload.cjs (SIGUSR2). Also printed: the heap trims each
 * process made (libs/service heap-trimmer) and what they cost. `--hold S`: sample again S seconds
 * after the loaded sample (does the memory go back?). `--delete`: then delete every pod and sample
 * once they are gone and the node drained (what a process keeps of pods that are gone: its heap
 * after a GC should be back near the idle one).
 *
 * With `--snapshot DIR`, every process also writes a V8 heap snapshot right after the idle and the
 * loaded sample (`DIR/<process>.idle.heapsnapshot`, `DIR/<process>.loaded.heapsnapshot`, and
 * `.deleted.` with `--delete`, opened in
 * Chrome DevTools → Memory). Writing one takes tens of MiB of native memory that stays in the RSS:
 * the samples after an idle snapshot are no longer comparable (the heap contents still are).
 *
 * Usage: node --import tsx test/bench/memory-probe.ts [--pods 1000] [--pod-workers 2] [--splitlet-root DIR] [--json out.json]
 *        [--snapshot DIR] [--hold 0] [--delete] [--up-arg=--no-apiserver …] [--env NAME=VALUE …] (of every process, e.g. NODE_OPTIONS=--max-semi-space-size=4)
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { NodeUnderTest } from './lib/node-under-test.ts';
import { envArgs } from './lib/probe-report.ts';
import { fmt, gitCommit, loadAverage } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '1000' },
    'pod-workers': { type: 'string', default: '2' },
    'splitlet-root': { type: 'string' },
    json: { type: 'string' },
    snapshot: { type: 'string' },
    hold: { type: 'string', default: '0' },
    delete: { type: 'boolean', default: false },
    'up-arg': { type: 'string', multiple: true, default: [] },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const PODS = Number(values.pods);
const WORKERS = Number(values['pod-workers']);
const HOLD = Number(values.hold);
for (const [k, v] of [
  ['pods', PODS],
  ['pod-workers', WORKERS],
  ['hold', HOLD],
] as const) {
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k} must be a number ≥ 0`);
}

interface Usage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, { size: number; used: number }>;
}
/** One process's answer (lib/memory-preload.cjs): before and after a full GC; and the kernel's split of its RSS. */
interface Sample {
  t: number;
  before: Usage;
  gc: Usage;
  snapshot?: string;
  /** RSS of anonymous memory (heaps, malloc) and of mapped files (the node binary's pages: shared by every process), and the peak RSS so far (VmHWM), bytes, read after the GC. */
  kernel?: { anon: number; file: number; peak: number };
}

/** RssAnon and RssFile of /proc/<pid>/status, bytes. */
function kernelRss(pid: number): { anon: number; file: number; peak: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)?.[1] ?? NaN) * 1024;
    return { anon: kb('RssAnon'), file: kb('RssFile'), peak: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const MiB = (b: number): number => b / 1048576;

/** Asks every process for its memory and waits for the answers (processes that do not answer in 60 s are left out). */
async function sampleAll(procs: ReadonlyArray<{ name: string; pid: number }>, dir: string): Promise<Map<string, Sample>> {
  const asked = Date.now();
  for (const p of procs) process.kill(p.pid, 'SIGUSR2');
  const out = new Map<string, Sample>();
  const end = asked + 60_000;
  while (out.size < procs.length && Date.now() < end) {
    for (const p of procs) {
      if (out.has(p.name)) continue;
      const file = join(dir, `mem.${p.pid}.json`);
      if (!existsSync(file)) continue;
      const s = JSON.parse(readFileSync(file, 'utf8')) as Sample;
      if (s.t >= asked) out.set(p.name, { ...s, ...(kernelRss(p.pid) !== undefined ? { kernel: kernelRss(p.pid)! } : {}) });
    }
    await sleep(50);
  }
  for (const p of procs) if (!out.has(p.name)) console.error(`${p.name} (pid ${p.pid}) did not answer the memory request`);
  return out;
}

function print(title: string, samples: Map<string, Sample>): void {
  console.log(`\n${title} (MiB; "gc" = after a full GC; peak = the highest RSS so far):`);
  console.log(
    `  ${'process'.padEnd(16)} ${['rss', 'heapTot', 'heapUsed', 'external', 'arrayBuf', 'rss gc', 'heap gc', 'used gc', 'anon gc', 'file gc', 'peak'].map((h) => h.padStart(8)).join(' ')}`,
  );
  for (const [name, s] of samples) {
    const b = s.before;
    const g = s.gc;
    const cols = [b.rss, b.heapTotal, b.heapUsed, b.external, b.arrayBuffers, g.rss, g.heapTotal, g.heapUsed, s.kernel?.anon ?? NaN, s.kernel?.file ?? NaN, s.kernel?.peak ?? NaN];
    console.log(`  ${name.padEnd(16)} ${cols.map((x) => fmt(MiB(x), 1).padStart(8)).join(' ')}`);
  }
}

/** Heap snapshots of every process, after the samples (a snapshot allocates: it would skew them): `snapDir/<name>.<label>.heapsnapshot`. */
async function snapshots(label: string, procs: ReadonlyArray<{ name: string; pid: number }>, dir: string, snapDir: string): Promise<void> {
  mkdirSync(snapDir, { recursive: true });
  writeFileSync(join(dir, 'snapshot'), '');
  try {
    for (const [name, s] of await sampleAll(procs, dir)) {
      if (s.snapshot === undefined) continue;
      const to = join(snapDir, `${name}.${label}.heapsnapshot`);
      writeFileSync(to, readFileSync(s.snapshot));
      rmSync(s.snapshot);
      console.log(`  heap snapshot of ${name}: ${to}`);
    }
  } finally {
    rmSync(join(dir, 'snapshot'), { force: true });
  }
}

async function main(): Promise<void> {
  const load0 = loadAverage();
  // Parsed before anything is made: a bad --env leaves nothing behind.
  const extra = envArgs(values.env);
  const dir = mkdtempSync(join(tmpdir(), 'splitlet-memory-'));
  const snapDir = values.snapshot === undefined ? undefined : resolve(values.snapshot);
  const preload = `--require ${resolve(import.meta.dirname, 'lib', 'memory-preload.cjs')}`;
  const node = await NodeUnderTest.start({
    env: { ...extra, NODE_OPTIONS: `${preload} ${extra['NODE_OPTIONS'] ?? ''}`.trim(), SPLITLET_BENCH_MEMORY_DIR: dir },
    podWorkers: WORKERS,
    maxPods: PODS + 100,
    spans: false,
    upArgs: values['up-arg'],
    ...(values['splitlet-root'] !== undefined ? { splitletRoot: resolve(values['splitlet-root']) } : {}),
  });
  try {
    const procs = node.processes().filter((p) => p.name !== 'nats-server');
    await sleep(3000); // as the bench's memory row: start-up settles before the idle sample
    const idle = await sampleAll(procs, dir);
    print('idle, 3 s after start', idle);
    const trimsIdle = await node.heapTrims();
    console.log(`\nheap trims at start (count, ms the process was blocked in all): ${[...trimsIdle].map(([k, t]) => `${k} ${t.count}/${fmt(t.ms, 0)}`).join(', ')}`);
    if (snapDir !== undefined) await snapshots('idle', procs, dir, snapDir);
    const names = Array.from({ length: PODS }, (_, i) => `mem-${i}`);
    const t0 = Date.now();
    for (const n of names) node.create(n);
    await node.waitRunning(names, 120_000 + PODS * 500);
    const running = Date.now() - t0;
    await node.waitDrained(120_000 + PODS * 200);
    await sleep(2000);
    const loaded = await sampleAll(procs, dir);
    print(`holding ${PODS} pods (Running after ${fmt(running / 1000)} s, drained, +2 s)`, loaded);
    const trims = await node.heapTrims();
    console.log(`\nheap trims so far (count, ms the process was blocked in all): ${[...trims].map(([k, t]) => `${k} ${t.count}/${fmt(t.ms, 0)}`).join(', ')}`);
    if (snapDir !== undefined) await snapshots('loaded', procs, dir, snapDir);
    let held: Map<string, Sample> | undefined;
    if (HOLD > 0) {
      await sleep(HOLD * 1000);
      held = await sampleAll(procs, dir);
      print(`holding ${PODS} pods, ${HOLD} s later`, held);
    }
    let deleted: Map<string, Sample> | undefined;
    if (values.delete === true) {
      for (const n of names) node.delete(n);
      await node.waitGone(120_000 + PODS * 500);
      await node.waitDrained(120_000 + PODS * 200);
      await sleep(2000);
      deleted = await sampleAll(procs, dir);
      print(`the ${PODS} pods deleted and gone, drained, +2 s`, deleted);
      if (snapDir !== undefined) await snapshots('deleted', procs, dir, snapDir);
      console.log('\nheap kept after a full GC (MiB), idle → holding the pods → pods gone:');
      for (const name of deleted.keys()) {
        const used = (m: Map<string, Sample>): string => fmt(MiB(m.get(name)?.gc.heapUsed ?? NaN), 1);
        console.log(`  ${name.padEnd(16)} ${used(idle).padStart(6)} → ${used(loaded).padStart(6)} → ${used(deleted).padStart(6)}`);
      }
    }
    const load1 = loadAverage();
    console.log(`\nload average before ${load0.join(' ')}, after ${load1.join(' ')}`);
    if (values.json !== undefined) {
      const plain = (m: Map<string, Sample> | undefined): Record<string, Sample> | undefined => (m === undefined ? undefined : Object.fromEntries(m));
      const commit = gitCommit(values['splitlet-root'] === undefined ? resolve(import.meta.dirname, '..', '..') : resolve(values['splitlet-root']));
      writeFileSync(
        values.json,
        JSON.stringify(
          { commit, pods: PODS, load: [load0, load1], idle: plain(idle), loaded: plain(loaded), held: plain(held), deleted: plain(deleted), heapTrims: Object.fromEntries(trims) },
          null,
          2,
        ),
      );
    }
  } finally {
    await node.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
