/**
 * One operation at a time per key (a pod UID), in arrival order, with no head-of-line blocking
 * across keys.
 *
 * Models the per-pod serialization the kubelet gets from running each pod's work in its own pod
 * worker goroutine (pkg/kubelet/pod_workers.go) and the one-operation-in-flight rule of
 * pkg/volume/util/nestedpendingoperations, for requests that arrive over the bus instead.
 */
import type { Clock } from './clock.js';

/** Serializes async operations per key. Safe for concurrent use from one event loop. */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();
  readonly #started = new Map<symbol, number>();
  readonly #now: () => number;

  /** @param clock time source of {@link oldestRunningMs}. @default the wall clock */
  constructor(clock: Pick<Clock, 'now'> = { now: () => Date.now() }) {
    this.#now = () => clock.now();
  }

  /**
   * Runs `fn` once every earlier operation on `key` has settled (in arrival order), and returns its
   * result. A failing operation does not block the next one. The key's entry is dropped when its
   * queue drains, so idle keys cost nothing.
   */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    const token = Symbol(key);
    try {
      await previous;
      this.#started.set(token, this.#now());
      return await fn();
    } finally {
      this.#started.delete(token);
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** How long the oldest running operation has been running (0 when idle), for health by progress. */
  oldestRunningMs(): number {
    let oldest = Infinity;
    for (const t of this.#started.values()) oldest = Math.min(oldest, t);
    return oldest === Infinity ? 0 : this.#now() - oldest;
  }

  /** Keys with an operation running or waiting. */
  get activeKeys(): number {
    return this.#tails.size;
  }
}
