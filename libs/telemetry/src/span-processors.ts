import type { Context } from '@opentelemetry/api';
import { globalErrorHandler } from '@opentelemetry/core';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * A span processor whose list of delegates can grow after the provider is built (SDK 2.x takes
 * processors only in the provider's constructor). Used so the bus, connected after
 * `startTelemetry`, can still attach its span publisher. A delegate added later sees only spans
 * that start after it was added.
 */
export class LateSpanProcessor implements SpanProcessor {
  readonly #delegates: SpanProcessor[] = [];
  #shutDown = false;

  /** Adds a delegate. After shutdown, the delegate is shut down at once instead. */
  add(processor: SpanProcessor): void {
    if (this.#shutDown) {
      processor.shutdown().catch((e: unknown) => globalErrorHandler(e instanceof Error ? e : new Error(String(e))));
      return;
    }
    this.#delegates.push(processor);
  }

  onStart(span: Span, parentContext: Context): void {
    for (const p of this.#delegates) p.onStart(span, parentContext);
  }

  onEnding(span: Span): void {
    for (const p of this.#delegates) p.onEnding?.(span);
  }

  onEnd(span: ReadableSpan): void {
    for (const p of this.#delegates) p.onEnd(span);
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.#delegates.map((p) => p.forceFlush()));
  }

  async shutdown(): Promise<void> {
    this.#shutDown = true;
    await Promise.all(this.#delegates.map((p) => p.shutdown()));
  }
}
