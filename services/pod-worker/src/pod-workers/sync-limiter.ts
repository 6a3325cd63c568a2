/**
 * A fair, bounded gate for concurrent syncs shared by every partition of the process.
 *
 * Waiters are served first-in first-out. The pod workers release their slot after every sync and
 * queue again for the next one, so a pod that keeps syncing cannot starve the others (each UID has
 * at most one waiter at a time) — except across a worker state transition: the next state's sync
 * (terminating, then terminated: at most two) runs in the same slot.
 */
export interface SyncLimiter {
  /**
   * Waits for a free slot and returns its release function (idempotent). Rejects with the
   * signal's reason when `signal` aborts before a slot was granted.
   */
  acquire(signal: AbortSignal): Promise<() => void>;
  /** Slots in use. */
  readonly active: number;
  /** Waiters queued. */
  readonly waiting: number;
}

interface Waiter {
  grant: (release: () => void) => void;
  cancelled: boolean;
}

/** Creates a FIFO limiter with `max` slots (at least 1). */
export function createSyncLimiter(max: number): SyncLimiter {
  const limit = Math.max(1, Math.floor(max));
  let active = 0;
  const queue: Waiter[] = [];

  const makeRelease = (): (() => void) => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      active--;
      pump();
    };
  };

  const pump = (): void => {
    while (active < limit && queue.length > 0) {
      const w = queue.shift();
      if (!w || w.cancelled) continue;
      active++;
      w.grant(makeRelease());
    }
  };

  return {
    acquire(signal: AbortSignal): Promise<() => void> {
      if (signal.aborted) return Promise.reject(signal.reason);
      if (active < limit && queue.length === 0) {
        active++;
        return Promise.resolve(makeRelease());
      }
      return new Promise((resolve, reject) => {
        const onAbort = (): void => {
          w.cancelled = true;
          reject(signal.reason);
        };
        const w: Waiter = {
          cancelled: false,
          grant: (release) => {
            signal.removeEventListener('abort', onAbort);
            resolve(release);
          },
        };
        signal.addEventListener('abort', onAbort, { once: true });
        queue.push(w);
      });
    },
    get active() {
      return active;
    },
    get waiting() {
      return queue.filter((w) => !w.cancelled).length;
    },
  };
}
