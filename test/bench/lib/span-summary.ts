/**
 * Where a burst's time goes by span: every span the node's processes published to `SL_SPANS`
 * (PUBLISH_SPANS=true), grouped by process and span name — count per pod, median and p90 duration —
 * and, for a server or consumer span whose parent is another process's span, the wait between the
 * two starts (request or message in transit and queued at the receiver). With CRI calls that take
 * time (the simulator's latency), it shows which hop a pod waits in when the CPU is not the limit.
 */
import { Subjects, type SpanRecord } from '@splitlet/api';
import { connectBus } from '@splitlet/bus';
import { createLogger } from '@splitlet/telemetry';
import { fmt, pct } from './stats.ts';

interface Row {
  durMs: number[];
  waitMs: number[];
}

/** OpenTelemetry's SpanKind values of a SpanRecord's `kind`: SERVER and CONSUMER. */
const SERVER = 1;
const CONSUMER = 4;

const ms = (nanos: string): number => Number(BigInt(nanos) / 1000n) / 1000;

/** Groups `spans` by `<service> <name>`; waits are measured from the parent span's start (other process only). */
export function summarizeSpans(spans: readonly SpanRecord[]): Map<string, Row> {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const rows = new Map<string, Row>();
  for (const s of spans) {
    const key = `${s.service} ${s.name}`;
    let r = rows.get(key);
    if (r === undefined) rows.set(key, (r = { durMs: [], waitMs: [] }));
    const start = ms(s.startUnixNano);
    r.durMs.push(ms(s.endUnixNano) - start);
    const parent = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId);
    if ((s.kind === SERVER || s.kind === CONSUMER) && parent !== undefined && parent.service !== s.service) {
      r.waitMs.push(start - ms(parent.startUnixNano));
    }
  }
  return rows;
}

/** Reads node `node`'s spans from the nats-server at `natsUrl` and prints the summary, busiest (total duration) first. */
export async function printSpanSummary(natsUrl: string, node: string, pods: number, top = 40, waterfall = false): Promise<void> {
  const bus = await connectBus({ servers: natsUrl, process: 'span-summary', node, logger: createLogger({ service: 'span-summary', level: 'error' }) });
  const spans: SpanRecord[] = [];
  try {
    await bus.readSpans(Subjects.spansAll(node), (s) => spans.push(s));
  } finally {
    await bus.close();
  }
  const total = (r: Row): number => r.durMs.reduce((x, y) => x + y, 0);
  const rows = [...summarizeSpans(spans)].map(([k, r]) => [k, r, total(r)] as const).sort((a, b) => b[2] - a[2]);
  console.log(`\nspans (${spans.length}): count per pod, duration median / p90 (ms), and for a server or consumer span the wait since its caller's span started, median / p90`);
  for (const [k, r] of rows.slice(0, top)) {
    const wait = r.waitMs.length > 0 ? `   wait ${fmt(pct(r.waitMs, 50), 1).padStart(7)} / ${fmt(pct(r.waitMs, 90), 1).padStart(7)}` : '';
    console.log(`  ${fmt(r.durMs.length / pods, 2).padStart(6)}  ${fmt(pct(r.durMs, 50), 1).padStart(7)} / ${fmt(pct(r.durMs, 90), 1).padStart(7)}${wait}  ${k}`);
  }
  if (waterfall) printMedianWaterfall(spans);
}

/**
 * Prints every span of the creation trace (the one holding cri-adapter's `kuberuntime.SyncPod`) whose
 * length, first span's start to last span's end, is the median of all pods': ms after its first span.
 */
function printMedianWaterfall(spans: readonly SpanRecord[]): void {
  const byTrace = new Map<string, SpanRecord[]>();
  for (const s of spans) {
    let t = byTrace.get(s.traceId);
    if (t === undefined) byTrace.set(s.traceId, (t = []));
    t.push(s);
  }
  const creations = [...byTrace.values()]
    .filter((t) => t.some((s) => s.name === 'kuberuntime.SyncPod'))
    .map((t) => {
      const start = Math.min(...t.map((s) => ms(s.startUnixNano)));
      return { t, start, len: Math.max(...t.map((s) => ms(s.endUnixNano))) - start };
    })
    .sort((a, b) => a.len - b.len);
  const median = creations[Math.floor(creations.length / 2)];
  if (median === undefined) return;
  const t0 = median.start;
  console.log(`\nthe median creation trace (${creations.length} traces; this one ${fmt(median.len, 1)} ms): every span, ms after its first`);
  for (const s of [...median.t].sort((a, b) => ms(a.startUnixNano) - ms(b.startUnixNano))) {
    const st = ms(s.startUnixNano) - t0;
    console.log(
      `${fmt(st, 1).padStart(8)} ${fmt(ms(s.endUnixNano) - t0, 1).padStart(8)} ${fmt(ms(s.endUnixNano) - ms(s.startUnixNano), 1).padStart(7)}  ${s.service.padEnd(15)} ${s.name}`,
    );
  }
}
