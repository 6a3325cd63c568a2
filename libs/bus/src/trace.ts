/**
 * W3C trace context over NATS headers and inside KV records, with messaging spans.
 * Only `@opentelemetry/api` is used here; the SDK is installed by each process's main.
 */
import { context, propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { Context, Link, Span, Tracer } from '@opentelemetry/api';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { MsgHdrs } from '@nats-io/transport-node';

/** The tracer every bus span is created with. */
export function busTracer(): Tracer {
  return trace.getTracer('splitlet.bus');
}

/** Injects `ctx` (default: the active context) into fresh NATS headers. */
export function headersWithContext(ctx: Context = context.active()): MsgHdrs {
  const h = natsHeaders();
  propagation.inject(ctx, h, { set: (c, k, v) => c.set(k, v) });
  return h;
}

/** Extracts a context from NATS headers (missing headers give the root context). */
export function contextFromHeaders(h: MsgHdrs | undefined): Context {
  if (!h) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, h, {
    get: (c, k) => {
      const v = c.get(k);
      return v === '' ? undefined : v;
    },
    keys: (c) => c.keys(),
  });
}

/** A plain carrier (`traceparent`, `tracestate`) for `ctx`, to store inside a KV record. */
export function carrierFromContext(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context stored in a record's carrier. */
export function contextFromCarrier(carrier: Record<string, string> | undefined): Context {
  if (!carrier) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** A span link to the span stored in a carrier, if there is one. */
export function linkFromContext(ctx: Context): Link | undefined {
  const sc = trace.getSpanContext(ctx);
  return sc && trace.isSpanContextValid(sc) ? { context: sc } : undefined;
}

/** Subject template with the node and pod-uid tokens generalised, for low-cardinality span names. */
export function subjectTemplate(subject: string): string {
  const parts = subject.split('.');
  if (parts[0] !== 'sl' || parts.length < 3) return subject;
  const out = ['sl', '{node}', ...parts.slice(2)];
  switch (parts[2]) {
    case 'work':
      return ['sl', '{node}', 'work', '{partition}', '{uid}'].join('.');
    case 'pleg':
    case 'status':
    case 'events':
      return ['sl', '{node}', parts[2], '{uid}'].join('.');
    case 'spans':
      return 'sl.{node}.spans.{trace}';
    default:
      return out.join('.');
  }
}

/** Ends `span` with an error status for `e`. */
export function failSpan(span: Span, e: unknown): void {
  const err = e instanceof Error ? e : new Error(String(e));
  span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
}

export { SpanKind };
