/** The PRODUCER span of a JetStream publish, shared by every bus implementation. */
import { context, SpanKind, trace } from '@opentelemetry/api';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { PublishAck, PublishOptions } from './bus.js';
import { busTracer, failSpan, headersWithContext, subjectTemplate } from './trace.js';

/**
 * Runs `send` inside a PRODUCER span for `subject`, handing it headers that carry the span's
 * context; records where the message was stored, or the failure.
 */
export async function publishInSpan(subject: string, data: Uint8Array, opts: PublishOptions, send: (headers: MsgHdrs) => Promise<PublishAck>): Promise<PublishAck> {
  const parent = opts.ctx ?? context.active();
  const span = busTracer().startSpan(
    `send ${subjectTemplate(subject)}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': 'nats',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'publish',
        'messaging.destination.name': subject,
        'messaging.destination.template': subjectTemplate(subject),
        'messaging.message.body.size': data.byteLength,
        ...(opts.msgID !== undefined ? { 'messaging.message.id': opts.msgID } : {}),
      },
    },
    parent,
  );
  try {
    const ack = await send(headersWithContext(trace.setSpan(parent, span)));
    span.setAttribute('messaging.nats.stream', ack.stream);
    span.setAttribute('messaging.nats.stream_sequence', ack.seq);
    return ack;
  } catch (e) {
    failSpan(span, e);
    throw e;
  } finally {
    span.end();
  }
}
