import { randomBytes } from 'node:crypto';
import { ROOT_CONTEXT, TraceFlags, context as otelContext, isSpanContextValid, trace, type Context, type Link, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import type { TraceCarrier } from '@splitlet/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * The wire format of trace context on the bus: W3C `traceparent`/`tracestate` plus W3C `baggage`.
 * Fixed (not the global propagator) so that the bus format does not depend on SDK registration;
 * stateless, hence safe to share.
 */
const W3C = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
});

const setter: TextMapSetter<TraceCarrier> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/** Header lookup is case-insensitive (HTTP and NATS header names are); an empty value counts as absent. */
const getter: TextMapGetter<Readonly<TraceCarrier>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const direct = carrier[key];
    if (direct !== undefined) return direct === '' ? undefined : direct;
    const lower = key.toLowerCase();
    for (const [k, v] of Object.entries(carrier)) if (k.toLowerCase() === lower) return v === '' ? undefined : v;
    return undefined;
  },
};

/**
 * Serializes the trace context (as the `TraceCarrier` of `@splitlet/api`: NATS headers copied into a
 * map, or a KV record's `trace` field) of `ctx` (default: the active context) into a new carrier, e.g.
 * `{traceparent: '00-…-…-01'}`. Returns `{}` when there is no valid span context and no baggage.
 */
export function injectContext(ctx: Context = otelContext.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  W3C.inject(ctx, carrier, setter);
  return carrier;
}

/**
 * Reads a carrier written by {@link injectContext} (or any W3C producer) into a context whose remote
 * span can parent new spans (`withSpan(..., {parent})`). Missing or malformed headers yield a
 * context without a span (a new trace starts).
 */
export function extractContext(carrier: Readonly<TraceCarrier> | undefined, base: Context = ROOT_CONTEXT): Context {
  if (carrier === undefined) return base;
  return W3C.extract(base, carrier, getter);
}

/**
 * A span link to the span a carrier names, or `undefined` when it names none. Used on redelivery or
 * replay, where the consumer span starts its own trace but must point at the original producer.
 */
export function linkFromCarrier(carrier: Readonly<TraceCarrier> | undefined): Link | undefined {
  const spanContext = trace.getSpanContext(extractContext(carrier));
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return undefined;
  return { context: spanContext };
}

/** Trace and span id of the active span, or `undefined` when none is active (e.g. for error replies). */
export function currentTraceIds(ctx: Context = otelContext.active()): { traceId: string; spanId: string } | undefined {
  const spanContext = trace.getSpanContext(ctx);
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return undefined;
  return { traceId: spanContext.traceId, spanId: spanContext.spanId };
}

/**
 * A context (based on `base`, default the active one) whose span is a fresh, non-recording span
 * context that is **not sampled** (W3C trace flags `00`). Under a parent-based sampler (splitlet's
 * default, `parentbased_always_on`) work run in it records no span, and the context it propagates
 * on the bus (`traceparent: 00-…-…-00`) tells the processes it calls not to record theirs either.
 *
 * For periodic chatter (a relist every second, a housekeeping request every two) that must start
 * no trace, here or downstream. Suppressing tracing instead would drop the headers altogether, so
 * the callee would start a new trace per call.
 */
export function unsampledContext(base: Context = otelContext.active()): Context {
  return trace.setSpanContext(base, {
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    traceFlags: TraceFlags.NONE,
  });
}

/** Runs `fn` in an {@link unsampledContext} of the active context. */
export function runUnsampled<T>(fn: () => T): T {
  return otelContext.with(unsampledContext(), fn);
}
