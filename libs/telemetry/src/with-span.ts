import { SpanStatusCode, context as otelContext, type Attributes, type Context, type Link, type Span, type SpanKind, type Tracer } from '@opentelemetry/api';

/** Options of {@link withSpan}. */
export interface WithSpanOptions {
  /** Attributes set at start (visible to samplers). */
  readonly attributes?: Attributes;
  /** @default SpanKind.INTERNAL */
  readonly kind?: SpanKind;
  /** Links, e.g. to the producer of a redelivered message (see `linkFromCarrier`). */
  readonly links?: readonly Link[];
  /**
   * The parent context, e.g. one extracted from message headers. @default the active context
   */
  readonly parent?: Context;
}

/** `error.type` for a thrown value: a splitlet error's `code`, else the error's name. */
function errorType(e: unknown): string {
  if (typeof e === 'object' && e !== null) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    if (e instanceof Error) return e.name;
  }
  return typeof e;
}

/**
 * Runs `fn` inside a new span that is active for everything `fn` awaits (child spans, log
 * records, injected trace context). On success the span ends with status UNSET. When `fn` throws or
 * rejects, the span records the exception, gets status ERROR with the error's message and attribute
 * `error.type`, ends, and the error is rethrown unchanged. The span always ends exactly once.
 */
export async function withSpan<T>(tracer: Tracer, name: string, options: WithSpanOptions, fn: (span: Span) => Promise<T> | T): Promise<T> {
  const parent = options.parent ?? otelContext.active();
  return tracer.startActiveSpan(
    name,
    {
      ...(options.attributes === undefined ? {} : { attributes: options.attributes }),
      ...(options.kind === undefined ? {} : { kind: options.kind }),
      ...(options.links === undefined ? {} : { links: [...options.links] }),
    },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        span.recordException(e instanceof Error ? e : message);
        span.setAttribute('error.type', errorType(e));
        span.setStatus({ code: SpanStatusCode.ERROR, message });
        throw e;
      } finally {
        span.end();
      }
    },
  );
}
