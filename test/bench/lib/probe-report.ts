/**
 * What the probes (burst-probe.ts, delete-probe.ts) share: the environment that makes every process
 * of the node profile itself, and the tables they print per pod — CPU ms by process, bus messages by
 * subject, CRI calls by operation, RPC latencies — and the profile summaries of a time window.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { BusSpy } from './bus-spy.ts';
import { readProfiles, summarizeProfile, type ProfileSummary } from './cpu-profiles.ts';
import { fmt, gitCommit, pct, type KernelCounts } from './stats.ts';

/**
 * With a directory: empties it and returns the environment under which every process of the node
 * profiles itself into it (lib/cpu-prof-preload.cjs); without one, no environment.
 */
export function cpuProfileEnv(dir: string | undefined): { env: Record<string, string> } | Record<string, never> {
  if (dir === undefined) return {};
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return { env: { NODE_OPTIONS: `--require ${resolve(import.meta.dirname, 'cpu-prof-preload.cjs')}`, SPLITLET_BENCH_CPU_PROF_DIR: dir } };
}

/** The probes' `--env NAME=VALUE` arguments as an environment; throws naming an argument without `=`. */
export function envArgs(args: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    args.map((kv) => {
      const i = kv.indexOf('=');
      if (i <= 0) throw new Error(`--env ${kv}: expected NAME=VALUE`);
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  );
}

/** Prints CPU ms per pod by process, busiest first, and their total. */
export function printCpuMs(heading: string, cpuMs: Readonly<Record<string, number>>): void {
  console.log(`\n${heading}`);
  for (const [k, v] of Object.entries(cpuMs).sort((a, b) => b[1] - a[1])) console.log(`  ${k.padEnd(18)} ${fmt(v, 2).padStart(7)}`);
  console.log(
    `  ${'total'.padEnd(18)} ${fmt(
      Object.values(cpuMs).reduce((a, b) => a + b, 0),
      2,
    ).padStart(7)}`,
  );
}

/** Prints read and write system calls and major page faults per pod by process, most calls first, with their sums. */
export function printKernelCounts(heading: string, perPod: Readonly<Record<string, KernelCounts>>): void {
  console.log(`\n${heading}`);
  console.log(`  ${''.padEnd(18)} ${'reads'.padStart(7)} ${'writes'.padStart(7)} ${'major faults'.padStart(13)}`);
  const rows = Object.entries(perPod).sort((a, b) => b[1].reads + b[1].writes - (a[1].reads + a[1].writes));
  const line = (name: string, v: KernelCounts): void =>
    console.log(`  ${name.padEnd(18)} ${fmt(v.reads, 1).padStart(7)} ${fmt(v.writes, 1).padStart(7)} ${fmt(v.majorFaults, 2).padStart(13)}`);
  for (const [k, v] of rows) line(k, v);
  const sum = (f: keyof KernelCounts): number => rows.reduce((a, [, v]) => a + v[f], 0);
  line('total', { reads: sum('reads'), writes: sum('writes'), majorFaults: sum('majorFaults') });
}

/** Prints the spy's messages per pod by subject (those of at least 0.05 per pod), with their mean size. */
export function printMessages(heading: string, spy: BusSpy, pods: number): void {
  console.log(`\n${heading} (${fmt(spy.total() / pods)} in all):`);
  for (const [k, v] of [...spy.counts].sort((a, b) => b[1] - a[1])) {
    if (v / pods < 0.05) continue;
    console.log(`  ${fmt(v / pods, 2).padStart(6)}  ${fmt((spy.bytes.get(k) ?? 0) / v, 0).padStart(6)} B  ${k}`);
  }
}

/** CRI calls per pod by operation between two readings of cri-adapter's counters (those that moved). */
export function criCallsPerPod(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>, pods: number): Map<string, number> {
  return new Map([...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / pods] as const).filter(([, v]) => v > 0));
}

/** Prints CRI calls per pod, most first. */
export function printCriCalls(heading: string, perPod: ReadonlyMap<string, number>): void {
  console.log(`\n${heading}`);
  for (const [k, v] of [...perPod].sort((a, b) => b[1] - a[1])) console.log(`  ${fmt(v, 2).padStart(6)}  ${k}`);
}

/** Prints the spy's requests: count per pod, median and p90 reply latency. */
export function printRpcs(heading: string, spy: BusSpy, pods: number): void {
  console.log(`\n${heading}`);
  for (const [k, xs] of [...spy.rpcLatency].sort((a, b) => b[1].length - a[1].length)) {
    console.log(`  ${fmt(xs.length / pods, 2).padStart(6)}  ${String(pct(xs, 50)).padStart(6)} / ${String(pct(xs, 90)).padStart(6)}  ${k}`);
  }
}

/** Per request template: count per pod, median and p90 latency (for the JSON). */
export function rpcSummary(spy: BusSpy, pods: number): Record<string, { perPod: number; p50: number; p90: number }> {
  return Object.fromEntries([...spy.rpcLatency].map(([k, xs]) => [k, { perPod: xs.length / pods, p50: pct(xs, 50), p90: pct(xs, 90) }]));
}

/** A time window of the node's processes (monotonic µs, the profiles' clock) and their names by pid. */
export interface ProfileWindow {
  readonly from: number;
  readonly to: number;
  readonly names: ReadonlyMap<number, string>;
}

/** The profiles in `dir` of the window's processes, summarized over the window, busiest first. */
export function windowProfiles(dir: string, w: ProfileWindow): Array<{ name: string; s: ProfileSummary }> {
  return [...readProfiles(dir)]
    .filter(([pid]) => w.names.has(pid))
    .map(([pid, prof]) => ({ name: w.names.get(pid)!, s: summarizeProfile(prof, pid, w.from, w.to) }))
    .sort((a, b) => b.s.busyMs - a.s.busyMs);
}

/**
 * Prints each process's profile summary per `divisor` (pods, or seconds: `unit`): its busy time,
 * optionally its busiest files, its busiest functions (self time) and optionally splitlet's functions
 * by inclusive time, `top` of each.
 */
export function printProfiles(
  summaries: ReadonlyArray<{ name: string; s: ProfileSummary }>,
  divisor: number,
  unit: string,
  top: number,
  show: { readonly files?: boolean; readonly inclusive?: boolean },
): void {
  const digits = unit === 'pod' ? 3 : 2;
  for (const { name, s } of summaries) {
    console.log(`\n  ${name}: ${fmt(s.busyMs / divisor, unit === 'pod' ? 2 : 1)} ms per ${unit}`);
    if (show.files === true)
      console.log(
        `    files:     ${s.files
          .slice(0, 8)
          .map((f) => `${f.name} ${fmt(f.ms / divisor, 2)}`)
          .join(', ')}`,
      );
    for (const f of s.functions.slice(0, top)) console.log(`    ${fmt(f.ms / divisor, digits).padStart(7)}  ${f.name}`);
    if (show.inclusive !== true) continue;
    console.log('    inclusive, splitlet code:');
    for (const f of s.ownInclusive.slice(0, top)) console.log(`    ${fmt(f.ms / divisor, digits).padStart(7)}  ${f.name}`);
  }
}

/** Writes a probe's summary as JSON to `path`, dated and stamped with the commit of the build that ran (`splitletRoot`, else this checkout). */
export function writeProbeJson(path: string, splitletRoot: string | undefined, summary: object): void {
  const commit = gitCommit(splitletRoot === undefined ? resolve(import.meta.dirname, '..', '..', '..') : resolve(splitletRoot));
  writeFileSync(path, `${JSON.stringify({ date: new Date().toISOString(), commit, node: process.version, ...summary }, null, 2)}\n`);
}
