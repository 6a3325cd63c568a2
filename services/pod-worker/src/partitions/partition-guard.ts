/**
 * The holder's view of one partition lease: whether it is still safe to act, and the fence to
 * attach to every side effect.
 */
import type { Fence } from '@splitlet/api';
import { PodWorkerError } from '../errors.js';

/** What a partition's pod workers check before every write and side effect. */
export interface PartitionGuard {
  readonly partition: number;
  /** The lease's acquisition revision: the fencing token, unchanged by renewals. */
  readonly epoch: number;
  /** True while the lease is held and was renewed recently enough that it cannot have expired. */
  held(): boolean;
  /** Throws a `LeaseLost` error unless {@link PartitionGuard.held}. */
  assertHeld(): void;
  /** `{partition, epoch}` for requests to cri-adapter and volume-manager. */
  fence(): Fence;
}

/** A guard whose state the partition manager drives. */
export class LeaseGuard implements PartitionGuard {
  readonly partition: number;
  readonly epoch: number;
  readonly #now: () => number;
  readonly #safeHoldMs: number;
  #renewedAt: number;
  #revoked = false;

  /**
   * @param renewedAt when the acquiring write was sent
   * @param safeHoldMs how long after a renewal was sent the lease is certainly still ours
   *   (bucket TTL minus one renew period)
   */
  constructor(partition: number, epoch: number, renewedAt: number, safeHoldMs: number, now: () => number) {
    this.partition = partition;
    this.epoch = epoch;
    this.#renewedAt = renewedAt;
    this.#safeHoldMs = safeHoldMs;
    this.#now = now;
  }

  /** A renewal sent at `sentAt` succeeded. */
  renewed(sentAt: number): void {
    if (sentAt > this.#renewedAt) this.#renewedAt = sentAt;
  }

  /** The lease is gone (lost, released): never held again. */
  revoke(): void {
    this.#revoked = true;
  }

  get revoked(): boolean {
    return this.#revoked;
  }

  /** Milliseconds since the last successful renewal was sent. */
  sinceRenewal(): number {
    return this.#now() - this.#renewedAt;
  }

  held(): boolean {
    return !this.#revoked && this.sinceRenewal() < this.#safeHoldMs;
  }

  assertHeld(): void {
    if (!this.held()) {
      throw new PodWorkerError('LeaseLost', `partition ${this.partition} lease (epoch ${this.epoch}) is no longer held`);
    }
  }

  fence(): Fence {
    return { partition: this.partition, epoch: this.epoch };
  }
}
