/**
 * Fencing of side effects by partition epoch.
 *
 * Models nothing in the kubelet (it is one process); see DESIGN.md §3 "Fencing": a pod-worker's
 * lease revision is its epoch, and a receiver rejects an epoch older than the newest it has seen for
 * that partition, so a paused former owner cannot act.
 */
import { KubeletError } from '@splitlet/api';
import type { Fence } from '@splitlet/api';

/** The error code of a rejected stale fence. Not retryable: the sender lost its lease. */
export const FENCED_OFF = 'FencedOff';

/** Keeps the highest epoch seen per partition, in memory. */
export class FenceTracker {
  readonly #highest = new Map<number, number>();

  /**
   * Accepts `fence` (recording its epoch) when its epoch is at least the highest seen for its
   * partition; throws a KubeletError `FencedOff` (retryable false) otherwise.
   */
  admit(fence: Fence): void {
    const seen = this.#highest.get(fence.partition);
    if (seen !== undefined && fence.epoch < seen) {
      throw new KubeletError(
        FENCED_OFF,
        `fenced off: partition ${fence.partition} epoch ${fence.epoch} is older than epoch ${seen} already seen`,
        { retryable: false },
      );
    }
    if (seen === undefined || fence.epoch > seen) this.#highest.set(fence.partition, fence.epoch);
  }

  /** The highest epoch seen for `partition`, if any. */
  highest(partition: number): number | undefined {
    return this.#highest.get(partition);
  }
}
