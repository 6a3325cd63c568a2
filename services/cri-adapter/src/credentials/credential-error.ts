/**
 * CredentialError: a docker config or pull secret that cannot be used. Its message names the file,
 * secret or registry and what is wrong with it, never a credential.
 */
import { KubeletError } from '@splitlet/api';

/** The CredentialError codes. */
export const CredentialErrorCodes = ['InvalidDockerConfig', 'PullSecretNotFound', 'PullSecretUnavailable'] as const;
export type CredentialErrorCode = (typeof CredentialErrorCodes)[number];

/** A docker config or pull secret problem. `PullSecretUnavailable` is retryable (the source was down). */
export class CredentialError extends KubeletError {
  override readonly name: string = 'CredentialError';
  declare readonly code: CredentialErrorCode;

  constructor(code: CredentialErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { retryable: code === 'PullSecretUnavailable', cause: options.cause });
  }
}
