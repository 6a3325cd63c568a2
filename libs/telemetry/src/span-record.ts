import { ROOT_CONTEXT, context as otelContext, type HrTime, type Context } from '@opentelemetry/api';
import { globalErrorHandler, suppressTracing } from '@opentelemetry/core';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { SpanRecord } from '@splitlet/api';
import { REDACTED, isSecretKey } from './redact.js';

/** `service.name` (the stable semantic convention, spelled out: see start-telemetry.ts). */
export const ATTR_SERVICE_NAME = 'service.name';

function hrTimeToUnixNano(t: HrTime): string {
  return (BigInt(t[0]) * 1_000_000_000n + BigInt(t[1])).toString();
}

/**
 * Converts a finished SDK span into the bus's `kubelet.trace.Span.v1` record (`@splitlet/api`
 * `SpanRecord`): times as decimal nanosecond strings (exact, unlike `number`), array attributes
 * as JSON text, secret-looking attribute keys redacted. `service` defaults to the span resource's
 * `service.name`. Pure.
 */
export function spanToRecord(span: ReadableSpan, service?: string): SpanRecord {
  const attributes: SpanRecord['attributes'] = {};
  for (const [k, v] of Object.entries(span.attributes)) {
    if (v === undefined || v === null) continue;
    if (isSecretKey(k)) attributes[k] = REDACTED;
    else if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') attributes[k] = v;
    else attributes[k] = JSON.stringify(v);
  }
  const resourceService = span.resource.attributes[ATTR_SERVICE_NAME];
  const ctx = span.spanContext();
  const record: SpanRecord = {
    type: 'kubelet.trace.Span.v1',
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    name: span.name,
    kind: span.kind,
    service: service ?? (typeof resourceService === 'string' ? resourceService : 'unknown'),
    startUnixNano: hrTimeToUnixNano(span.startTime),
    endUnixNano: hrTimeToUnixNano(span.endTime),
    statusCode: span.status.code,
    attributes,
    links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    events: span.events.map((e) => ({ name: e.name, timeUnixNano: hrTimeToUnixNano(e.time) })),
  };
  if (span.parentSpanContext !== undefined) record.parentSpanId = span.parentSpanContext.spanId;
  if (span.status.message !== undefined && span.status.message !== '') record.statusMessage = span.status.message;
  return record;
}

/** Options of {@link createSpanRecordProcessor}. */
export interface SpanRecordProcessorOptions {
  /**
   * Receives the finished, sampled spans as records, a batch at a time (e.g. publishes them to
   * `SL_SPANS`). Called inside a context with tracing suppressed (so spans the sink itself would
   * create, like a bus publish span, are not recorded and cannot loop). A returned promise is
   * awaited by `forceFlush`/`shutdown`.
   */
  readonly sink: (records: SpanRecord[]) => void | Promise<void>;
  /** `service` of every record. @default the span resource's `service.name` */
  readonly service?: string;
  /** Receives sink failures. @default the OTel global error handler (`startTelemetry`'s `onError`) */
  readonly onError?: (error: unknown) => void;
  /** How long a finished span may wait for others before the batch goes to `sink`. @default 100 */
  readonly batchDelayMs?: number;
  /** A batch this large goes to `sink` at once. @default 256 */
  readonly maxBatch?: number;
}

/**
 * A span processor that hands finished spans, as {@link SpanRecord}s, to `sink` in batches — how
 * splitlet keeps traces on the bus so the CLI works without a collector. A batch goes out
 * `batchDelayMs` after its first span, when it reaches `maxBatch`, or on `forceFlush`/`shutdown`
 * (whoever closes the sink's transport must flush first). Pass it to
 * `startTelemetry({spanProcessors})` or `telemetry.addSpanProcessor()`. After `shutdown()` it drops
 * spans.
 */
export function createSpanRecordProcessor(options: SpanRecordProcessorOptions): SpanProcessor {
  const pending = new Set<Promise<void>>();
  const delayMs = options.batchDelayMs ?? 100;
  const maxBatch = options.maxBatch ?? 256;
  let buffer: SpanRecord[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const report = (e: unknown): void => {
    if (options.onError !== undefined) options.onError(e);
    else globalErrorHandler(e instanceof Error ? e : new Error(String(e)));
  };
  const suppressed: Context = suppressTracing(ROOT_CONTEXT);
  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (buffer.length === 0) return;
    const batch = buffer;
    buffer = [];
    let result: void | Promise<void>;
    try {
      result = otelContext.with(suppressed, () => options.sink(batch));
    } catch (e) {
      report(e);
      return;
    }
    if (result instanceof Promise) {
      const p = result.catch(report).finally(() => pending.delete(p));
      pending.add(p);
    }
  };
  return {
    onStart(_span: Span, _parentContext: Context): void {},
    onEnd(span: ReadableSpan): void {
      if (closed) return;
      try {
        buffer.push(spanToRecord(span, options.service));
      } catch (e) {
        report(e);
        return;
      }
      if (buffer.length >= maxBatch) flush();
      else if (timer === undefined) {
        timer = setTimeout(flush, delayMs);
        timer.unref();
      }
    },
    async forceFlush(): Promise<void> {
      flush();
      await Promise.all([...pending]);
    },
    async shutdown(): Promise<void> {
      flush();
      closed = true;
      await Promise.all([...pending]);
    },
  };
}
