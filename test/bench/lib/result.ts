/**
 * The JSON a benchmark run writes (`--out`), read back by `render-report.ts`.
 */

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
