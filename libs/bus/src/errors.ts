import { KubeletError } from '@splitlet/api';

/** Why a bus operation failed. */
export const BusErrorCodes = {
  Timeout: 'Timeout',
  NoResponders: 'NoResponders',
  SchemaInvalid: 'SchemaInvalid',
  Remote: 'Remote',
  Conflict: 'Conflict',
  NotFound: 'NotFound',
  Closed: 'Closed',
  Unsupported: 'Unsupported',
  /** The NATS server refused the subject to this process's user (its permissions). */
  PermissionDenied: 'PermissionDenied',
} as const;
export type BusErrorCode = (typeof BusErrorCodes)[keyof typeof BusErrorCodes];

/** A bus failure. `Remote` carries the code and message of the error the responder returned. */
export class BusError extends KubeletError {
  override readonly name = 'BusError';
  /** For `Remote`: the responder's error code. */
  readonly remoteCode: string | undefined;

  constructor(code: BusErrorCode, message: string, options?: { retryable?: boolean; cause?: unknown; remoteCode?: string }) {
    super(code, message, options);
    this.remoteCode = options?.remoteCode;
  }
}

/** Type guard on a bus error's code. */
export function isBusError(e: unknown, code?: BusErrorCode): e is BusError {
  return e instanceof Error && e.name === 'BusError' && (code === undefined || (e as BusError).code === code);
}
