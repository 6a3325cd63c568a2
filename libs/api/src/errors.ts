/**
 * The base of every splitlet error class. Errors cross processes as {@link WireError}, so callers
 * check `code` (with a type guard), never `instanceof`.
 */
export class KubeletError extends Error {
  override readonly name: string = 'KubeletError';
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, options?: { retryable?: boolean; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options?.retryable ?? false;
  }

  /** The shape this error takes on the bus. */
  toWire(): { code: string; message: string; retryable: boolean } {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

/** True when `e` carries the given error code (any KubeletError-shaped object, local or decoded from the wire). */
export function hasErrorCode(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/** A readable message for any thrown value. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
