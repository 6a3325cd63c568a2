/**
 * Finished spans onto stream `SL_SPANS`, so `splitlet trace` works without a collector.
 */
import { SpanRecord, Subjects } from '@splitlet/api';
import type { NatsBus } from '@splitlet/bus';
import { createSpanRecordProcessor, type Telemetry } from '@splitlet/telemetry';

/** Adds a span processor that publishes every finished span on `sl.<node>.spans.<traceId>`. */
export function publishSpansToBus(telemetry: Pick<Telemetry, 'addSpanProcessor'>, bus: Pick<NatsBus, 'publish'>, node: string): void {
  telemetry.addSpanProcessor(
    createSpanRecordProcessor({
      sink: async (record) => {
        await bus.publish(SpanRecord, Subjects.spans(node, record.traceId), record);
      },
    }),
  );
}
