/**
 * cri-adapter's runtime event stream on core NATS, `sl.<node>.runtimeevents.*` (RuntimeEventMessage):
 * the pods' reports and the stream's state, one subscription so they keep cri-adapter's order.
 */
import { trace, type Context } from '@opentelemetry/api';
import { RuntimeEventMessage, Subjects } from '@splitlet/api';
import { contextFromHeaders, type Bus } from '@splitlet/bus';
import type { Logger } from '@splitlet/telemetry';

/**
 * Calls `onMessage` for every valid message until `signal` aborts, with the trace context of its
 * NATS headers when they carry one. The bus dead-letters a message that does not match the schema;
 * a pod's message on another pod's subject is logged and dropped (pleg then sees a gap and relists).
 */
export function subscribeRuntimeEvents(
  bus: Pick<Bus, 'subscribeCoreMessages'>,
  node: string,
  onMessage: (msg: RuntimeEventMessage, trigger: Context | undefined) => void,
  signal: AbortSignal,
  logger: Pick<Logger, 'warn'>,
): void {
  const stateSubject = Subjects.runtimeEventStream(node);
  bus.subscribeCoreMessages(
    RuntimeEventMessage,
    Subjects.runtimeEventsAll(node),
    (msg, meta) => {
      const expected = msg.type === 'kubelet.runtime.EventStreamState.v1' ? stateSubject : Subjects.runtimeEvents(node, msg.uid);
      if (meta.subject !== expected) {
        logger.warn('a runtime event message on the wrong subject; ignored', { subject: meta.subject, expected, type: msg.type });
        return;
      }
      const ctx = contextFromHeaders(meta.headers);
      const sc = trace.getSpanContext(ctx);
      onMessage(msg, sc !== undefined && trace.isSpanContextValid(sc) ? ctx : undefined);
    },
    signal,
  );
}
