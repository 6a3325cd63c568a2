import { KubeletError, hasErrorCode } from '@splitlet/api';

/** Failure codes of `@splitlet/testkit`. */
export const TestkitErrorCodes = {
  /** The `nats-server` binary is not installed / not where `NATS_SERVER_BIN` says. */
  NatsServerNotFound: 'NatsServerNotFound',
  /** A spawned process exited before it became ready or printed the awaited line. */
  ProcessExited: 'ProcessExited',
  /** A deadline passed: server readiness, `waitForLine`, `eventually`. */
  Timeout: 'Timeout',
} as const;

/** One of {@link TestkitErrorCodes}. */
export type TestkitErrorCode = (typeof TestkitErrorCodes)[keyof typeof TestkitErrorCodes];

/** The error thrown by testkit helpers; its message says what to do (install, look at this output). */
export class TestkitError extends KubeletError {
  override readonly name: string = 'TestkitError';
  declare readonly code: TestkitErrorCode;

  constructor(code: TestkitErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, { retryable: false, ...(options?.cause === undefined ? {} : { cause: options.cause }) });
  }
}

/** True when `e` carries the given {@link TestkitErrorCode}. */
export function isTestkitError(e: unknown, code: TestkitErrorCode): e is TestkitError {
  return hasErrorCode(e, code);
}
