/**
 * A trace as a terminal waterfall: one row per span, indented by parent, with the process, the
 * start offset, the duration and a bar on a shared time axis; failed spans are marked.
 */
import type { SpanRecord } from '@splitlet/api';

const ns = (s: string): bigint => BigInt(s);

/** Spans in depth-first order (children by start time); orphans (parent not in the set) are roots. */
export function orderSpans(spans: SpanRecord[]): { span: SpanRecord; depth: number }[] {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string, SpanRecord[]>();
  const roots: SpanRecord[] = [];
  for (const s of spans) {
    if (s.parentSpanId && ids.has(s.parentSpanId)) {
      const list = children.get(s.parentSpanId) ?? [];
      list.push(s);
      children.set(s.parentSpanId, list);
    } else roots.push(s);
  }
  const byStart = (a: SpanRecord, b: SpanRecord): number => (ns(a.startUnixNano) < ns(b.startUnixNano) ? -1 : ns(a.startUnixNano) > ns(b.startUnixNano) ? 1 : 0);
  const out: { span: SpanRecord; depth: number }[] = [];
  const visit = (s: SpanRecord, depth: number): void => {
    out.push({ span: s, depth });
    for (const c of (children.get(s.spanId) ?? []).sort(byStart)) visit(c, depth + 1);
  };
  for (const r of roots.sort(byStart)) visit(r, 0);
  return out;
}

function ms(n: bigint): string {
  const v = Number(n) / 1e6;
  return v >= 1000 ? `${(v / 1000).toFixed(2)}s` : v >= 10 ? `${v.toFixed(0)}ms` : `${v.toFixed(1)}ms`;
}

/** Renders the waterfall; `width` is the bar column width. */
export function renderWaterfall(spans: SpanRecord[], opts: { width?: number; color?: boolean } = {}): string {
  if (spans.length === 0) return 'no spans\n';
  const width = opts.width ?? 40;
  const rows = orderSpans(spans);
  const t0 = rows.reduce((m, r) => (ns(r.span.startUnixNano) < m ? ns(r.span.startUnixNano) : m), ns(rows[0]!.span.startUnixNano));
  const t1 = rows.reduce((m, r) => (ns(r.span.endUnixNano) > m ? ns(r.span.endUnixNano) : m), 0n);
  const total = t1 - t0 > 0n ? t1 - t0 : 1n;
  const nameWidth = Math.min(70, Math.max(...rows.map((r) => r.depth * 2 + r.span.name.length + 2)));
  const svcWidth = Math.max(...rows.map((r) => r.span.service.length), 7);
  const lines: string[] = [];
  lines.push(`${'SPAN'.padEnd(nameWidth)}  ${'PROCESS'.padEnd(svcWidth)}  ${'START'.padStart(8)}  ${'DURATION'.padStart(8)}  ${`0 … ${ms(total)}`}`);
  for (const { span, depth } of rows) {
    const start = ns(span.startUnixNano) - t0;
    const dur = ns(span.endUnixNano) - ns(span.startUnixNano);
    const from = Math.min(width - 1, Number((start * BigInt(width)) / total));
    const len = Math.max(1, Math.min(width - from, Number((dur * BigInt(width)) / total)));
    const failed = span.statusCode === 2;
    const bar = ' '.repeat(from) + (failed ? '✗' : '█').repeat(len);
    let name = `${'  '.repeat(depth)}${failed ? '✗ ' : ''}${span.name}`;
    if (name.length > nameWidth) name = `${name.slice(0, nameWidth - 1)}…`;
    let line = `${name.padEnd(nameWidth)}  ${span.service.padEnd(svcWidth)}  ${ms(start).padStart(8)}  ${ms(dur).padStart(8)}  ${bar}`;
    if (failed && span.statusMessage) line += `  ${span.statusMessage}`;
    if (opts.color && failed) line = `\u001b[31m${line}\u001b[0m`;
    lines.push(line);
  }
  const errors = rows.filter((r) => r.span.statusCode === 2).length;
  const services = new Set(rows.map((r) => r.span.service));
  lines.push(`${rows.length} spans from ${services.size} processes (${[...services].sort().join(', ')}), ${errors} with errors, trace ${rows[0]!.span.traceId}`);
  return lines.join('\n') + '\n';
}
