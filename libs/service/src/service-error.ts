import { KubeletError, hasErrorCode } from '@splitlet/api';

/** Failure codes of `@splitlet/service`. */
export const ServiceErrorCodes = {
  /** The environment does not satisfy the service's config schema (thrown as {@link ConfigError}). */
  InvalidConfig: 'InvalidConfig',
  /** The health/metrics HTTP server could not bind its host and port. */
  ListenFailed: 'ListenFailed',
  /** Shutdown began: the abort reason of the signal `runService` hands to `start`. */
  ShuttingDown: 'ShuttingDown',
  /** A health check was registered twice under one name. */
  DuplicateHealthCheck: 'DuplicateHealthCheck',
} as const;

/** One of {@link ServiceErrorCodes}. */
export type ServiceErrorCode = (typeof ServiceErrorCodes)[keyof typeof ServiceErrorCodes];

/** An error of the process lifecycle (`runService`, `HealthRegistry`). Never retryable. */
export class ServiceError extends KubeletError {
  override readonly name: string = 'ServiceError';
  declare readonly code: ServiceErrorCode;

  constructor(code: ServiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, { retryable: false, ...(options?.cause === undefined ? {} : { cause: options.cause }) });
  }
}

/** One bad environment variable: its name and why it was rejected (never its value). */
export interface ConfigIssue {
  /** The variable, e.g. `NATS_URL` (or `(config)` for a rule spanning several). */
  readonly variable: string;
  /** Why, e.g. `is required but not set`. */
  readonly message: string;
}

/**
 * The environment does not satisfy a service's config schema. The message names every bad
 * variable and why (values are never included: they may be secrets). Fatal at start: `main` logs
 * it and exits non-zero.
 */
export class ConfigError extends ServiceError {
  override readonly name: string = 'ConfigError';
  declare readonly code: typeof ServiceErrorCodes.InvalidConfig;
  /** Every problem found, in schema order. */
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(ServiceErrorCodes.InvalidConfig, `invalid configuration: ${issues.map((i) => `${i.variable}: ${i.message}`).join('; ')}`);
    this.issues = issues;
  }
}

/** True when `e` carries the given {@link ServiceErrorCode} (checked by `code`, never `instanceof`). */
export function isServiceError(e: unknown, code: ServiceErrorCode): e is ServiceError {
  return hasErrorCode(e, code);
}

/** True when `e` is a {@link ConfigError} (code `InvalidConfig`). */
export function isConfigError(e: unknown): e is ConfigError {
  return hasErrorCode(e, ServiceErrorCodes.InvalidConfig);
}
