/**
 * Fencing that survives a restart: the {@link FenceKeeper}'s in-memory marks, seeded at start from
 * the {@link FenceStore} and written back before a request with a newer epoch acts. Without it, a
 * restarted cri-adapter would accept the first epoch it sees again, so a paused former owner whose
 * request arrives first could act after all.
 *
 * ```
 * request(partition p, epoch e) ─ check (memory): e < newest(p) → FencedOff
 *                               └ e is the newest: await the write of newest(p) ─▶ act
 * ```
 */
import type { Fence } from '@splitlet/api';
import type { FenceStore } from '../ports.js';
import { FenceKeeper } from '@splitlet/kube';

/** The fence checks {@link RuntimeOperations} makes. */
export interface Fences {
  /** Refuses a stale fence (`FencedOff`), from memory only: the cheap check before waiting for a lock. */
  check(fence: Fence): void;
  /** {@link check}, then resolves once the partition's newest epoch (at least `fence.epoch`) is stored. */
  admit(fence: Fence): Promise<void>;
}

interface PendingWrite {
  /** The epoch the write stores at least. */
  readonly epoch: number;
  readonly done: Promise<void>;
}

/** {@link Fences} over a {@link FenceStore}. Safe for concurrent use; writes per partition go one at a time. */
export class DurableFences implements Fences {
  readonly #keeper = new FenceKeeper();
  readonly #store: FenceStore;
  /** The newest epoch known stored, per partition. */
  readonly #stored = new Map<number, number>();
  readonly #pending = new Map<number, PendingWrite>();

  private constructor(store: FenceStore) {
    this.#store = store;
  }

  /** Loads the stored epochs; the first check of each partition then compares against them. */
  static async open(store: FenceStore): Promise<DurableFences> {
    const fences = new DurableFences(store);
    for (const [partition, epoch] of await store.load()) {
      fences.#keeper.check({ partition, epoch });
      fences.#stored.set(partition, epoch);
    }
    return fences;
  }

  check(fence: Fence): void {
    this.#keeper.check(fence);
  }

  async admit(fence: Fence): Promise<void> {
    this.#keeper.check(fence);
    await this.#durable(fence.partition);
  }

  /** The newest epoch seen for `partition`, if any. */
  newest(partition: number): number | undefined {
    return this.#keeper.newest(partition);
  }

  #durable(partition: number): Promise<void> {
    const want = this.#keeper.newest(partition) ?? 0;
    if ((this.#stored.get(partition) ?? -1) >= want) return Promise.resolve();
    const pending = this.#pending.get(partition);
    if (pending !== undefined && pending.epoch >= want) return pending.done;
    // Chained after the partition's write in flight; a failed write is retried by the next admit.
    const done: Promise<void> = (pending?.done.catch(() => undefined) ?? Promise.resolve())
      .then(async () => {
        const epoch = this.#keeper.newest(partition) ?? want;
        if ((this.#stored.get(partition) ?? -1) >= epoch) return;
        await this.#store.save(partition, epoch);
        this.#stored.set(partition, Math.max(epoch, this.#stored.get(partition) ?? -1));
      })
      .finally(() => {
        if (this.#pending.get(partition)?.done === done) this.#pending.delete(partition);
      });
    this.#pending.set(partition, { epoch: want, done });
    return done;
  }
}

/** A {@link FenceStore} in memory (tests, and a cri-adapter started without one). */
export function memoryFenceStore(): FenceStore & { readonly epochs: Map<number, number> } {
  const epochs = new Map<number, number>();
  return {
    epochs,
    load: () => Promise.resolve(new Map(epochs)),
    save: (partition, epoch) => {
      epochs.set(partition, epoch);
      return Promise.resolve();
    },
  };
}
