/**
 * `@splitlet/telemetry`: the only place the OpenTelemetry SDK is installed (`startTelemetry`), plus
 * what every process shares on top of the API: a JSON-lines logger stamped with trace ids,
 * `withSpan`, W3C trace-context carriers for the bus, the span-record processor for `SL_SPANS`,
 * and a Prometheus registry with the kubelet's bucket layouts.
 * @packageDocumentation
 */
export { startTelemetry } from './start-telemetry.js';
export type { Telemetry, TelemetryOptions } from './start-telemetry.js';
export { readOtelEnv, SamplerNames } from './otel-env.js';
export type { Env, OtelSettings, OtlpExportSettings, SamplerName } from './otel-env.js';
export { TelemetryError, TelemetryErrorCodes, isTelemetryError } from './telemetry-error.js';
export type { TelemetryErrorCode } from './telemetry-error.js';
export { createLogger, isLogLevel, LogLevels } from './logger.js';
export type { Logger, LoggerOptions, LogFields, LogLevel, LogStream } from './logger.js';
export { redact, isSecretKey, REDACTED } from './redact.js';
export { withSpan } from './with-span.js';
export type { WithSpanOptions } from './with-span.js';
export { podSpanAttributes } from './pod-span-attributes.js';
export type { PodIdentity } from './pod-span-attributes.js';
export { injectContext, extractContext, linkFromCarrier, currentTraceIds, unsampledContext, runUnsampled } from './trace-context.js';
export { spanToRecord, createSpanRecordProcessor } from './span-record.js';
export type { SpanRecordProcessorOptions } from './span-record.js';
export {
  createMetricsRegistry,
  EVENT_LOOP_MONITORING_PRECISION_MS,
  exponentialBuckets,
  DefBuckets,
  podStartupDurationBuckets,
  podStatusSyncBuckets,
  runtimeOperationsBuckets,
  containersPerPodBuckets,
  busRequestBuckets,
  createBusMetrics,
} from './metrics.js';
export type { MetricsRegistryOptions, BusMetricsRecorder } from './metrics.js';
