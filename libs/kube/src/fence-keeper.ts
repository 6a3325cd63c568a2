/**
 * Fencing of side effects: a request carries (partition, epoch = the lease revision its sender
 * held); an epoch older than the newest seen for that partition comes from a deposed owner (a
 * pod-worker that was paused past its lease and replaced) and is refused.
 *
 * Models no kubelet code (the kubelet is one process): it is splitlet's guard in every receiver of
 * pod-worker side effects (cri-adapter, volume-manager); see docs/architecture.md, "Fencing".
 */
import type { Fence } from '@splitlet/api';
import { KubeletError } from '@splitlet/api';

/** The error code of a refused stale fence. */
export const FENCED_OFF = 'FencedOff';

/** A request from an owner whose lease was superseded. Not retryable: the sender must stop. */
export class FencedOffError extends KubeletError {
  override readonly name = 'FencedOffError';

  constructor(fence: Fence, newest: number) {
    super(FENCED_OFF, `fenced off: partition ${fence.partition} epoch ${fence.epoch} is older than epoch ${newest} already seen`, { retryable: false });
  }
}

/**
 * Keeps the highest epoch seen per partition, in memory (its owner decides what survives a
 * restart). Synchronous, so safe for concurrent requests on one event loop.
 */
export class FenceKeeper {
  readonly #newest = new Map<number, number>();

  /**
   * Records `fence` and throws {@link FencedOffError} when its epoch is older than the newest seen
   * for its partition. Equal epochs pass (the same owner's retries and concurrent requests).
   */
  check(fence: Fence): void {
    const newest = this.#newest.get(fence.partition);
    if (newest !== undefined && fence.epoch < newest) throw new FencedOffError(fence, newest);
    if (newest === undefined || fence.epoch > newest) this.#newest.set(fence.partition, fence.epoch);
  }

  /** The newest epoch seen for `partition`, if any. */
  newest(partition: number): number | undefined {
    return this.#newest.get(partition);
  }
}
