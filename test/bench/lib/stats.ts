/**
 * Small measuring helpers of the benchmarks: percentiles, number formatting, and what the kernel
 * says about a process (RSS from /proc/<pid>/status, CPU time from /proc/<pid>/stat).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { procStat } from '@splitlet/testkit';

/** The p-th percentile (nearest rank) of `xs`; NaN when empty. */
export function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** `n` with `d` decimals, `n/a` when not finite. */
export const fmt = (n: number, d = 1): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');

/** The 1/5/15-minute load averages, rounded to two decimals. */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = loadavg().map((x) => Math.round(x * 100) / 100);
  return [a!, b!, c!];
}

/** What the benchmark ran on. */
export function machine(): { cpus: number; model: string; node: string } {
  const c = cpus();
  return { cpus: c.length, model: c[0]?.model.trim() ?? 'unknown', node: process.version };
}

/** A process's resident set as the kernel splits it (/proc/<pid>/status), MiB: all, anonymous, file-backed. */
export interface RssSplit {
  rss: number;
  anon: number;
  file: number;
}

/** The resident set of a process split into anonymous and file-backed memory (MiB); undefined when it is gone. */
export function rssSplit(pid: number): RssSplit | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const mib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: mib('VmRSS'), anon: mib('RssAnon'), file: mib('RssFile') };
}

/** Resident set size of a process in MiB; NaN when it is gone. */
export function rssMiB(pid: number): number {
  return rssSplit(pid)?.rss ?? NaN;
}

/** USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on Linux everywhere that matters). */
const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU seconds a process used so far; NaN when it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const rest = procStat(pid);
    // utime is field 14, stime 15.
    return (Number(rest[11]) + Number(rest[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** What a {@link cpuMeter} read: CPU seconds by process since it started, their sum, and the wall seconds. */
export interface CpuReading {
  readonly byProcess: Record<string, number>;
  readonly totalS: number;
  readonly wallS: number;
}

/** Starts counting the CPU of `procs`; each call of the returned function reads it since the start. */
export function cpuMeter(procs: ReadonlyArray<{ readonly name: string; readonly pid: number }>): () => CpuReading {
  const t0 = Date.now();
  const c0 = procs.map((p) => cpuSeconds(p.pid));
  return () => {
    const byProcess: Record<string, number> = {};
    procs.forEach((p, i) => (byProcess[p.name] = cpuSeconds(p.pid) - c0[i]!));
    return { byProcess, totalS: Object.values(byProcess).reduce((a, x) => a + x, 0), wallS: (Date.now() - t0) / 1000 };
  };
}

/**
 * What a process asked of the kernel so far: read and write system calls (of the read and write
 * families: sockets, pipes, files) and major page faults (a page read back from disk: code or data
 * the kernel had evicted).
 */
export interface KernelCounts {
  readonly reads: number;
  readonly writes: number;
  readonly majorFaults: number;
}

/** A process's {@link KernelCounts} so far, from `/proc/<pid>/io` (`syscr`, `syscw`) and `/proc/<pid>/stat` (`majflt`); NaN when it is gone. */
export function kernelCounts(pid: number): KernelCounts {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? NaN);
    // majflt is field 12.
    return { reads: field('syscr'), writes: field('syscw'), majorFaults: Number(procStat(pid)[9]) };
  } catch {
    return { reads: NaN, writes: NaN, majorFaults: NaN };
  }
}

/** Starts counting the {@link KernelCounts} of `procs`; each call of the returned function reads them by process since the start. */
export function kernelCountsMeter(procs: ReadonlyArray<{ readonly name: string; readonly pid: number }>): () => Record<string, KernelCounts> {
  const c0 = procs.map((p) => kernelCounts(p.pid));
  return () => {
    const out: Record<string, KernelCounts> = {};
    procs.forEach((p, i) => {
      const now = kernelCounts(p.pid);
      const then = c0[i]!;
      out[p.name] = { reads: now.reads - then.reads, writes: now.writes - then.writes, majorFaults: now.majorFaults - then.majorFaults };
    });
    return out;
  };
}

/** The short commit of the checkout at `dir` (the build under test), or `unknown` outside git. */
export function gitCommit(dir: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
