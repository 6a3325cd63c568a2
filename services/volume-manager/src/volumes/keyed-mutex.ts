/**
 * One operation at a time per key (pod UID), with no head-of-line blocking across keys.
 *
 * Models the kubelet's nestedpendingoperations (one operation per volume/pod in flight).
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();
  readonly #started = new Map<symbol, number>();
  readonly #now: () => number;

  /** @param now time source for {@link oldestRunningMs}. */
  constructor(now: () => number) {
    this.#now = now;
  }

  /** Runs `fn` once every earlier operation on `key` has settled. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.#tails.set(key, tail);
    await prev;
    const token = Symbol(key);
    this.#started.set(token, this.#now());
    try {
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

  /** Operations running or queued. */
  get size(): number {
    return this.#tails.size;
  }
}
