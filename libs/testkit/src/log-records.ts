/**
 * The structured (JSON) log records of a process's output, to assert on a record's exact `msg`
 * and fields instead of matching words in raw lines (a renamed message then fails the test
 * rather than passing it unnoticed).
 */

/** The JSON records among `lines` (other lines skipped), only those whose `msg` is `msg` when given. */
export function logRecords(lines: readonly string[], msg?: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) continue;
    const r = rec as Record<string, unknown>;
    if (msg === undefined || r['msg'] === msg) out.push(r);
  }
  return out;
}
