/**
 * The interface every reliability suite (`test/reliability/suites/*.ts`) exports: `run(opts)`
 * resolves one table and whether the suite held. `test/reliability/main.ts` prints them all; the
 * integration tests call each suite's `run` in its CI size and assert `ok`.
 */

/** `ci`: the bounded size CI runs; `long`: `npm run reliability -- --long`. */
export type SuiteMode = 'ci' | 'long';

export interface SuiteOptions {
  mode: SuiteMode;
  /** Progress lines (one per trial); the table comes back in the result. @default nothing */
  log?: (line: string) => void;
}

export interface SuiteResult {
  title: string;
  columns: string[];
  rows: string[][];
  ok: boolean;
}

/** The table as aligned text, title first. */
export function formatTable(r: SuiteResult): string {
  const widths = r.columns.map((c, i) => Math.max(c.length, ...r.rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [`${r.title}: ${r.ok ? 'ok' : 'FAILED'}`, line(r.columns), ...r.rows.map(line)].join('\n');
}
