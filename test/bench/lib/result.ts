/**
 * The JSON a benchmark run writes (`--out`), read back by `render-report.ts`.
 */
import type { BusHopCost } from './bus-hop-cost.ts';

/** One row of issue 13's table, as measured. */
export interface BenchRow {
  readonly id: string;
  readonly measure: string;
  /** What was measured, in words with units. */
  readonly value: string;
  /** The reference measured in the same run and the ratio to it, when the row has one. */
  readonly reference?: string;
  readonly target: string;
  /** Whether the target was met; absent for a row without a target. */
  readonly met?: boolean;
  /** The numbers behind `value` (for charts). */
  readonly data: Record<string, unknown>;
}

/** A whole run. */
export interface BenchResult {
  readonly date: string;
  readonly durationSeconds: number;
  readonly commit: string;
  readonly machine: { cpus: number; model: string; node: string };
  readonly quick: boolean;
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
  readonly settings: Record<string, number>;
  readonly rows: readonly BenchRow[];
}

/** What `burst-probe.ts --json` writes: one burst's cost per pod, with the CPU profile when `--cpu-prof` was given. */
export interface BurstProbeResult {
  readonly date?: string;
  /** The commit of the build the burst ran (absent in files written before it was recorded). */
  readonly commit?: string;
  /** The Node.js version that ran the node's processes (absent in files written before it was recorded). */
  readonly node?: string;
  readonly pods: number;
  readonly workers: number;
  readonly latencyMs: number;
  readonly podsPerSec: number;
  readonly load: readonly (readonly number[])[];
  /** CPU ms per pod by process, counted until the node drained after the burst (its events and API statuses included). */
  readonly cpuMsPerPod: Record<string, number>;
  /** The same until the last pod was Running (absent in files written before it was recorded). */
  readonly cpuMsPerPodToRunning?: Record<string, number>;
  /** The whole idle node's CPU ms per second, measured before the burst (absent in older files). */
  readonly idleCpuMsPerS?: number;
  /** Seconds `cpuMsPerPod` was counted over: from the first pod's creation until the node drained (absent in older files). */
  readonly countedSeconds?: number;
  /** Per process: RSS in MiB when idle before the burst and when the burst has settled. */
  readonly rssMiB?: Record<string, { readonly idle: number; readonly afterBurst: number }>;
  readonly messagesPerPod: Record<string, number>;
  /** Read and write system calls and major page faults per pod by process, counted as `cpuMsPerPod` (absent in older files). */
  readonly kernelPerPod?: Record<string, { readonly reads: number; readonly writes: number; readonly majorFaults: number }>;
  /** CRI calls cri-adapter made per pod, by operation type (`list_podsandbox`, …). */
  readonly criCallsPerPod?: Record<string, number>;
  readonly rpc: Record<string, { perPod: number; p50: number; p90: number }>;
  /** What one stream hop costs when nothing else runs, measured after the burst (absent in older files). */
  readonly busHop?: BusHopCost;
  /** Per process, busiest first: sampled CPU ms per pod, and the files and functions it went to. */
  readonly profile?: ReadonlyArray<{
    readonly process: string;
    readonly msPerPod: number;
    readonly files: ReadonlyArray<{ readonly name: string; readonly msPerPod: number }>;
    readonly functions: ReadonlyArray<{ readonly name: string; readonly msPerPod: number }>;
  }>;
}
