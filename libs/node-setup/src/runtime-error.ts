/**
 * RuntimeError: why the local containerd or its images could not be brought up.
 */

/** The RuntimeError codes. */
export const RuntimeErrorCodes = [
  /** A binary or file the runtime needs is not installed (the message names the Debian package). */
  'Missing',
  /** An option is invalid (e.g. a subnet that is not an IPv4 CIDR, a socket path that is too long). */
  'InvalidOption',
  /** The chosen or requested pod subnet overlaps an address or route already on the host. */
  'NetworkConflict',
  /** containerd exited during start, or did not answer a CRI `Version` call before the deadline. */
  'StartFailed',
  /** containerd did not exit after SIGTERM and SIGKILL, or its state could not be cleaned. */
  'StopFailed',
  /** `ctr images import` failed, or the imported image did not show up in the CRI image store. */
  'ImportFailed',
] as const;
export type RuntimeErrorCode = (typeof RuntimeErrorCodes)[number];

/**
 * A failure of the local runtime (containerd, its network, its images). Its message is meant for a
 * person as is: `splitlet` and `splitlet-node` print it alone (no stack) and exit with `exitCode`;
 * the `code` says which step failed and the message says what to do about it (which package to
 * install, which log to read).
 */
export class RuntimeError extends Error {
  readonly code: RuntimeErrorCode;
  /** The exit code a command failing with this error returns. */
  readonly exitCode = 1;

  constructor(code: RuntimeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message);
    Object.defineProperty(this, 'name', { value: 'RuntimeError' });
    this.code = code;
    if (options?.cause !== undefined) Object.defineProperty(this, 'cause', { value: options.cause, enumerable: false });
  }
}

/** True if `e` is a RuntimeError, optionally with the given code (checks the shape, not the class). */
export function isRuntimeError(e: unknown, code?: RuntimeErrorCode): e is RuntimeError {
  if (typeof e !== 'object' || e === null) return false;
  const c = (e as { code?: unknown }).code;
  if (typeof c !== 'string' || !(RuntimeErrorCodes as readonly string[]).includes(c)) return false;
  if ((e as { name?: unknown }).name !== 'RuntimeError') return false;
  return code === undefined || c === code;
}
