import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** The options of the OTLP exporter. */
type OtlpExporterConfig = NonNullable<ConstructorParameters<typeof OTLPTraceExporter>[0]>;

/**
 * The OTLP http/protobuf trace exporter, imported when it first exports: the exporter brings the
 * OTLP transformer and protobufjs, which a process that never exports (no `OTEL_*` endpoint, or no
 * sampled span yet) need not load. Export, flush and shutdown behave as the exporter's own; an
 * exporter never loaded has nothing to flush or shut down.
 */
export class LazyOtlpTraceExporter implements SpanExporter {
  readonly #config: OtlpExporterConfig;
  #exporter: Promise<SpanExporter> | undefined;

  constructor(config: OtlpExporterConfig) {
    this.#config = config;
  }

  #load(): Promise<SpanExporter> {
    this.#exporter ??= import('@opentelemetry/exporter-trace-otlp-proto').then((m) => new m.OTLPTraceExporter(this.#config));
    return this.#exporter;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.#load().then(
      (e) => e.export(spans, resultCallback),
      (e: unknown) => resultCallback({ code: ExportResultCode.FAILED, error: e instanceof Error ? e : new Error(String(e)) }),
    );
  }

  async forceFlush(): Promise<void> {
    if (this.#exporter === undefined) return;
    await (await this.#exporter).forceFlush?.();
  }

  async shutdown(): Promise<void> {
    if (this.#exporter === undefined) return;
    await (await this.#exporter).shutdown();
  }
}
