/**
 * The pod-worker's error classes. Callers check `code` with {@link hasErrorCode} from
 * `@splitlet/api`, never `instanceof`.
 */
import { KubeletError } from '@splitlet/api';

/** The pod-worker's error codes. */
export const PodWorkerErrorCodes = {
  /** The partition's lease is no longer held: no side effect may happen. */
  LeaseLost: 'LeaseLost',
  /** A step of a sync failed in a way the kubelet reports and requeues (SyncPod's returned error). */
  SyncFailed: 'SyncFailed',
} as const;
export type PodWorkerErrorCode = (typeof PodWorkerErrorCodes)[keyof typeof PodWorkerErrorCodes];

/** A pod-worker failure. */
export class PodWorkerError extends KubeletError {
  override readonly name = 'PodWorkerError';
  constructor(code: PodWorkerErrorCode, message: string, options?: { retryable?: boolean; cause?: unknown }) {
    super(code, message, options);
  }
}
