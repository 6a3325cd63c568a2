/**
 * kubectl's pod table: NAME READY STATUS RESTARTS AGE (and -o wide columns).
 * Models kubernetes pkg/printers/internalversion/printers.go printPod and apimachinery's HumanDuration.
 */
import { humanDuration, podCreatedAt, podRow, type PodRow } from '@splitlet/kube';

export { humanDuration, podCreatedAt, podRow };
export type { PodRow };

/** Formats rows as kubectl does: columns separated by at least three spaces. */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd((widths[i] ?? 0) + 3)))
      .join('')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/**
 * The `get pods` table, normal or wide. With `namespaces` (kubectl's `-A`) a NAMESPACE column comes
 * first, holding each row's namespace.
 */
export function podTable(rows: PodRow[], wide: boolean, namespaces?: readonly string[]): string {
  const headers = [...(namespaces ? ['NAMESPACE'] : []), 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', ...(wide ? ['IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES'] : [])];
  return formatTable(
    headers,
    rows.map((r, i) => [
      ...(namespaces ? [namespaces[i] ?? ''] : []),
      r.name,
      r.ready,
      r.status,
      r.restarts,
      r.age,
      ...(wide ? [r.ip, r.node, r.nominatedNode, r.readinessGates] : []),
    ]),
  );
}
