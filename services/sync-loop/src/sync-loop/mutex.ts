/**
 * A promise-chain mutex: the kubelet's syncLoop handles one config update or one housekeeping pass
 * at a time; this keeps that exclusion across awaits.
 */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `fn` after every earlier `run` settled; resolves or rejects as `fn` does. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn, fn);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
