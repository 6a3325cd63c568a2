/**
 * Runs periodic work with tracing suppressed, so a 1 s tick or a 2 s housekeeping pass does not
 * start a trace each time.
 */
import { context, createContextKey } from '@opentelemetry/api';

/**
 * The key the OpenTelemetry SDK reads to suppress tracing (`suppressTracing` of `@opentelemetry/core`;
 * context keys are `Symbol.for(description)`, so this is the same key without importing the SDK).
 */
const SUPPRESS_TRACING_KEY = createContextKey('OpenTelemetry SDK Context Key SUPPRESS_TRACING');

/** Calls `fn` in a context where no span is recorded. */
export function untraced<T>(fn: () => Promise<T>): Promise<T> {
  return context.with(context.active().setValue(SUPPRESS_TRACING_KEY, true), fn);
}
