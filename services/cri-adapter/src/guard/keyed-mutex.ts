/**
 * One operation per key at a time; different keys run concurrently.
 *
 * Models the per-pod serialization the kubelet gets from running each pod's sync in its own pod
 * worker goroutine (pkg/kubelet/pod_workers.go), for requests that arrive over the bus instead.
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  /** Keys with an operation running or waiting. */
  get activeKeys(): number {
    return this.#tails.size;
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
    try {
      await previous;
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
