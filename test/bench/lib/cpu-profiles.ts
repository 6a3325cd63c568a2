/**
 * Summaries of V8 CPU profiles (`node --cpu-prof`): for a window of time, the sampled milliseconds
 * of a process and where they went — by function (self time) and by source file — so a benchmark
 * can say where the CPU per pod goes in each process.
 *
 * Profile timestamps are microseconds of the monotonic clock, the one `process.hrtime` reads, so a
 * window measured with `process.hrtime.bigint()` in the benchmark selects the same samples.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Where one process's sampled time went. */
export interface ProfileSummary {
  readonly pid: number;
  /**
   * Sampled milliseconds of the main thread in the window (idle excluded), each sample at most the
   * profiler's interval. Less than the process's measured CPU: V8's GC helper threads, libuv's pool
   * and the profiler's own thread are not sampled.
   */
  readonly busyMs: number;
  /**
   * Self milliseconds by `function file:line`, largest first; a run of {@link LONG_RUN_SAMPLES} or
   * more samples in a row at one stack is its own entry, marked `(one uninterrupted run of N ms)`.
   */
  readonly functions: ReadonlyArray<{ readonly name: string; readonly ms: number }>;
  /** Self milliseconds by source file (node_modules packages grouped by package), largest first. */
  readonly files: ReadonlyArray<{ readonly name: string; readonly ms: number }>;
  /** Inclusive milliseconds of splitlet's own functions (services/, libs/): the time spent in them and in all they called. */
  readonly ownInclusive: ReadonlyArray<{ readonly name: string; readonly ms: number }>;
}

/** The current monotonic time in the profiles' unit (µs). */
export function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);
/**
 * This many samples in a row at one stack are one call that took that long: a function's own work
 * is interrupted by its callers and callees within milliseconds, so such a run is usually a stall
 * of the process or the machine in whatever ran then, and it is named apart from the function's time.
 */
export const LONG_RUN_SAMPLES = 20;

/** A short name for a script URL: the package for node_modules, else the path from the repo's services/ or libs/. */
function fileOf(url: string): string {
  if (url === '') return '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return `npm:${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const m = /\/((?:services|libs)\/.*)$/.exec(url);
  if (m !== null) return m[1]!.replace('/dist/', '/');
  return url.replace(/^file:\/\//, '').replace(/^node:/, 'node:');
}

/** Summarizes one profile over [fromUs, toUs] (monotonic µs). */
export function summarizeProfile(profile: CpuProfile, pid: number, fromUs: number, toUs: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const own = new Map<string, number>();
  const fn = new Map<string, number>();
  const files = new Map<string, number>();
  const interval = typicalInterval(profile.timeDeltas);
  // The samples in the window: each stands for the gap to the next sample, but for at most the
  // profiler's typical interval: a longer gap is time the process spent descheduled (on a loaded
  // machine the sampler's thread waits for a core too), not CPU spent in the sampled function.
  // Weighting by the raw gap made a busy process's profile 2× its measured CPU on a 2-core burst.
  const inWindow: Array<{ node: ProfileNode; ms: number }> = [];
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    if (t < fromUs || t > toUs) continue;
    const node = byId.get(profile.samples[i]!);
    if (node !== undefined) inWindow.push({ node, ms: Math.min(profile.timeDeltas[i + 1] ?? dt, interval) / 1000 });
  }
  // Each sample's run: the samples in a row at its stack, and their milliseconds.
  const run: Array<{ length: number; ms: number }> = [];
  for (let i = 0; i < inWindow.length;) {
    let j = i;
    let ms = 0;
    while (j < inWindow.length && inWindow[j]!.node === inWindow[i]!.node) ms += inWindow[j++]!.ms;
    for (let k = i; k < j; k++) run.push({ length: j - i, ms });
    i = j;
  }
  let busy = 0;
  for (const [i, { node, ms }] of inWindow.entries()) {
    const name = node.callFrame.functionName || '(anonymous)';
    const gc = name === '(garbage collector)';
    if (IDLE.has(name) && !gc) continue;
    busy += ms;
    const r = run[i]!;
    const key =
      (gc ? name : `${name} ${fileOf(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`) +
      (r.length >= LONG_RUN_SAMPLES && !gc ? ` (one uninterrupted run of ${r.ms.toFixed(0)} ms)` : '');
    fn.set(key, (fn.get(key) ?? 0) + ms);
    const f = gc ? '(gc)' : fileOf(node.callFrame.url);
    files.set(f, (files.get(f) ?? 0) + ms);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const cf = byId.get(id)!.callFrame;
      const file = fileOf(cf.url);
      if (!file.startsWith('services/') && !file.startsWith('libs/')) continue;
      const k = `${cf.functionName || '(anonymous)'} ${file}:${cf.lineNumber + 1}`;
      if (seen.has(k)) continue;
      seen.add(k);
      own.set(k, (own.get(k) ?? 0) + ms);
    }
  }
  const sorted = (m: Map<string, number>): Array<{ name: string; ms: number }> => [...m].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
  return { pid, busyMs: busy, functions: sorted(fn), files: sorted(files), ownInclusive: sorted(own) };
}

/** The profiler's sampling interval as this profile shows it: the median gap between samples (µs). */
function typicalInterval(deltas: readonly number[]): number {
  if (deltas.length === 0) return 0;
  const sorted = [...deltas].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** Every `.cpuprofile` in `dir` (node names them CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile), by pid. */
export function readProfiles(dir: string): Map<number, CpuProfile> {
  const out = new Map<number, CpuProfile>();
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.cpuprofile')) continue;
    const pid = Number(f.split('.')[3]);
    if (!Number.isInteger(pid)) continue;
    out.set(pid, JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile);
  }
  return out;
}
