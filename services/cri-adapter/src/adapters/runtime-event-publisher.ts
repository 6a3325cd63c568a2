/**
 * The evented PLEG's messages onto core NATS: `sl.<node>.runtimeevents.<uid>` for a pod,
 * `sl.<node>.runtimeevents._stream` for the stream's state (pleg subscribes to both with one
 * wildcard, so they keep their order). The bus validates each one.
 */
import { ROOT_CONTEXT, context, type Context } from '@opentelemetry/api';
import { RuntimeEventMessage, Subjects, errorMessage } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { Logger } from '@splitlet/telemetry';
import type { RuntimeEventPublisher } from '../evented/runtime-event-forwarder.js';

/**
 * A {@link RuntimeEventPublisher} over core NATS, with the trace context of `ctx` in the headers. A
 * message that fails validation (a bug) or cannot be sent is logged and not sent: pleg sees the gap
 * in the sequence numbers and relists.
 */
export function createBusRuntimeEventPublisher(bus: Pick<Bus, 'publishCoreMessage'>, node: string, logger: Pick<Logger, 'error'>): RuntimeEventPublisher {
  const stateSubject = Subjects.runtimeEventStream(node);
  return {
    send(message: RuntimeEventMessage, ctx: Context | undefined): void {
      const subject = message.type === 'kubelet.runtime.EventStreamState.v1' ? stateSubject : Subjects.runtimeEvents(node, message.uid);
      try {
        context.with(ctx ?? ROOT_CONTEXT, () => bus.publishCoreMessage(RuntimeEventMessage, subject, message));
      } catch (e) {
        logger.error('could not send a runtime event message; pleg will see the gap and relist', { type: message.type, subject, err: errorMessage(e) });
      }
    },
  };
}
