import { KubeletError, hasErrorCode } from '@splitlet/api';

/** Failure codes of `@splitlet/telemetry`. */
export const TelemetryErrorCodes = {
  /** An `OTEL_*` variable holds a value this SDK setup does not support. */
  InvalidConfig: 'InvalidConfig',
  /** `startTelemetry` was called while a global tracer provider is already installed. */
  AlreadyStarted: 'AlreadyStarted',
  /** The final flush in `shutdown()` did not finish in time (reported to `onError`, never thrown). */
  ShutdownTimeout: 'ShutdownTimeout',
} as const;

/** One of {@link TelemetryErrorCodes}. */
export type TelemetryErrorCode = (typeof TelemetryErrorCodes)[keyof typeof TelemetryErrorCodes];

/**
 * The error thrown by `@splitlet/telemetry` when telemetry cannot be started. Never retryable: it
 * is a configuration or programming error found at process start.
 */
export class TelemetryError extends KubeletError {
  override readonly name: string = 'TelemetryError';
  declare readonly code: TelemetryErrorCode;

  constructor(code: TelemetryErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, { retryable: false, ...(options?.cause === undefined ? {} : { cause: options.cause }) });
  }
}

/** True when `e` carries the given {@link TelemetryErrorCode} (checked by `code`, never `instanceof`). */
export function isTelemetryError(e: unknown, code: TelemetryErrorCode): e is TelemetryError {
  return hasErrorCode(e, code);
}
