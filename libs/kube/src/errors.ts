/**
 * The error family of `@splitlet/kube`.
 *
 * Models pkg/kubelet (the few places its pure helpers return errors: resource.ParseQuantity,
 * flowcontrol state restore).
 */
import { KubeletError } from '@splitlet/api';

/**
 * Codes a {@link KubeError} can carry.
 *
 * Models pkg/kubelet (error codes of this lib; no kubelet equivalent).
 */
export type KubeErrorCode = 'InvalidQuantity' | 'InvalidBackoffState' | 'UnsupportedFieldPath';

/**
 * An error raised by a pure `@splitlet/kube` function. Never retryable: the same input fails the
 * same way. Check it with {@link isKubeError}, not `instanceof`.
 *
 * Models pkg/kubelet (no single file: resource.ParseQuantity's ErrFormatWrong and friends).
 */
export class KubeError extends KubeletError {
  override readonly name: string = 'KubeError';
  declare readonly code: KubeErrorCode;

  constructor(code: KubeErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options?.cause === undefined ? { retryable: false } : { retryable: false, cause: options.cause });
  }
}

/**
 * True when `e` is a {@link KubeError}-shaped value (local or decoded from the wire) with the given code.
 *
 * Models pkg/kubelet (error type guards in place of errors.Is).
 */
export function isKubeError(e: unknown, code?: KubeErrorCode): e is { code: KubeErrorCode; message: string } {
  if (typeof e !== 'object' || e === null) return false;
  const c = (e as { code?: unknown }).code;
  if (code !== undefined) return c === code;
  return c === 'InvalidQuantity' || c === 'InvalidBackoffState' || c === 'UnsupportedFieldPath';
}
