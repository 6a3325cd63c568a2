/**
 * Publishes finished spans to `sl.<node>.spans.<traceId>` (stream `SL_SPANS`) so `splitlet trace`
 * works without a collector.
 */
import { SpanRecord, Subjects } from '@splitlet/api';
import type { NatsBus } from '@splitlet/bus';
import { createSpanRecordProcessor } from '@splitlet/telemetry';
import type { Logger } from '@splitlet/telemetry';

/** A span processor whose sink is the bus. Spans the publish itself makes are suppressed. */
export function busSpanProcessor(bus: NatsBus, node: string, service: string, logger: Logger): ReturnType<typeof createSpanRecordProcessor> {
  return createSpanRecordProcessor({
    service,
    sink: async (record) => {
      await bus.publish(SpanRecord, Subjects.spans(node, record.traceId), record);
    },
    onError: (e) => logger.debug('could not publish span', { err: e }),
  });
}
