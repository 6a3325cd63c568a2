/**
 * Span records on the bus: every process's span-record processor publishes finished spans to the
 * node's `SL_SPANS` (one {@link SpanBatch} per trace, on that trace's subject), and `splitlet trace`
 * reads them back, so traces work without a collector. Written once over the {@link Bus} contract.
 */
import { SpanBatch, Streams, Subjects, type SpanRecord } from '@splitlet/api';
import type { Bus } from './bus.js';

/** Publishes `records`, grouped by trace. */
export async function publishSpanRecords(bus: Pick<Bus, 'publish' | 'node'>, records: readonly SpanRecord[]): Promise<void> {
  const byTrace = new Map<string, SpanRecord[]>();
  for (const r of records) {
    const list = byTrace.get(r.traceId);
    if (list === undefined) byTrace.set(r.traceId, [r]);
    else list.push(r);
  }
  await Promise.all([...byTrace].map(([traceId, spans]) => bus.publish(SpanBatch, Subjects.spans(bus.node, traceId), { type: 'kubelet.trace.SpanBatch.v1', spans })));
}

/**
 * The span records on `SL_SPANS` under `filterSubject` (`Subjects.spans(node, traceId)` for one
 * trace, `Subjects.spansAll(node)` for all), in stream order.
 */
export async function readSpanRecords(
  bus: Pick<Bus, 'readStream'>,
  filterSubject: string,
  onSpan: (record: SpanRecord) => void,
  opts: { onInvalid?: (reason: string) => void } = {},
): Promise<void> {
  await bus.readStream(SpanBatch, Streams.spans, filterSubject, (batch) => batch.spans.forEach((r) => onSpan(r)), opts);
}
